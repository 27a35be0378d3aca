// The step tests' DGX clusters, 8 GPUs per node and 8 NICs: DGX A100 (NVLink 3, 300 GB/s per
// direction; HDR 200 Gb/s NICs; PCIe Gen4, 32 GB/s) and DGX H100 (NVLink 4, 450 GB/s; NDR
// 400 Gb/s; PCIe Gen5, 64 GB/s); and their H100 SXM GPU (989 TFLOP/s dense BF16, 3.35 TB/s
// HBM3, 132 SMs: NVIDIA's H100 datasheet).
#ifndef TRAINSIM_TESTS_STEP_DGX_H_
#define TRAINSIM_TESTS_STEP_DGX_H_

#include "comm/topology.h"
#include "parallelism/compute.h"

namespace trainsim::step {

inline comm::TopologySpec Dgx(int nodes, double nvlink_GBps, double nic_Gbps, double pcie_GBps) {
  comm::TopologySpec t;
  t.nodes = nodes;
  t.gpus_per_node = 8;
  t.nvlink_GBps = nvlink_GBps;
  t.nics_per_node = 8;
  t.nic_Gbps = nic_Gbps;
  t.pcie_GBps = pcie_GBps;
  return t;
}

inline comm::TopologySpec DgxA100(int nodes) { return Dgx(nodes, 300, 200, 32); }
inline comm::TopologySpec DgxH100(int nodes) { return Dgx(nodes, 450, 400, 64); }

inline parallelism::GpuSpec H100Sxm() {
  parallelism::GpuSpec g;
  g.name = "H100-SXM-80GB";
  g.peak_flops = 989e12;
  g.hbm_bytes_per_s = 3.35e12;
  g.num_sms = 132;
  return g;
}

}  // namespace trainsim::step

#endif  // TRAINSIM_TESTS_STEP_DGX_H_
