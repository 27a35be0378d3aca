#include "comm/nccl_model.h"

#include <cmath>
#include <limits>

namespace trainsim::comm {

ProtocolCosts NcclCosts(LatencyFamily family, Protocol protocol) {
  // tuning.cc: baseLat [LL, LL128, Simple] — Tree 6.8/14.0/8.4 us, Ring 6.6/14.0/8.4 us,
  // NVLS and NVLS-tree 0, CollNet Direct 0, PAT 8.0.
  // hwLat NVLink — Tree 0.6/1.25/4.0, Ring 0.6/1.9/3.4, NVLS and NVLS-tree Simple 25,
  // CollNet Direct Simple 3.7, PAT Simple 4.0; network — Tree 5.0/8.5/14, Ring 2.7/4.0/14.0,
  // NVLS Simple 18, NVLS-tree Simple 20.9, CollNet Direct Simple 31, PAT Simple 14 (us).
  static constexpr double kInf = std::numeric_limits<double>::infinity();
  static constexpr double kBase[6][3] = {{6.6, 14.0, 8.4},  {6.8, 14.0, 8.4},  {kInf, kInf, 0.0},
                                         {kInf, kInf, 0.0}, {kInf, kInf, 0.0}, {kInf, kInf, 8.0}};
  static constexpr double kNvlink[6][3] = {{0.6, 1.9, 3.4}, {0.6, 1.25, 4.0}, {0, 0, 25.0},
                                           {0, 0, 25.0},    {0, 0, 3.7},      {0, 0, 4.0}};
  static constexpr double kNetwork[6][3] = {{2.7, 4.0, 14.0}, {5.0, 8.5, 14.0}, {0, 0, 18.0},
                                            {0, 0, 20.9},     {0, 0, 31.0},     {0, 0, 14.0}};
  // LL: 8 data bytes per 16-byte line (tuning.cc: Ring/LL <= 0.5 busBw); LL128: tuning.cc caps
  // Ring/LL128 at 0.92 busBw (120/128 of each line carries data); Simple: all of it.
  static constexpr double kBwFactor[3] = {0.5, 0.92, 1.0};
  const int f = static_cast<int>(family);
  const int p = static_cast<int>(protocol);
  return ProtocolCosts{kBase[f][p] * 1e-6, kNvlink[f][p] * 1e-6, kNetwork[f][p] * 1e-6,
                       kBwFactor[p]};
}

uint64_t WireBytes(uint64_t payload, Protocol protocol, LatencyFamily family) {
  const double factor = NcclCosts(LatencyFamily::kRing, protocol).bw_factor *
                        (family == LatencyFamily::kTree ? 0.92 : 1.0);
  if (factor >= 1.0) return payload;
  return static_cast<uint64_t>(std::ceil(static_cast<double>(payload) / factor));
}

}  // namespace trainsim::comm
