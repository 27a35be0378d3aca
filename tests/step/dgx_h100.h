// The step tests' DGX H100 cluster: 8 GPUs per node, NVLink 4 (450 GB/s per direction), 8× NDR
// 400 Gb/s NICs, PCIe Gen5 (64 GB/s).
#ifndef TRAINSIM_TESTS_STEP_DGX_H100_H_
#define TRAINSIM_TESTS_STEP_DGX_H100_H_

#include "comm/topology.h"

namespace trainsim::step {

inline comm::TopologySpec DgxH100(int nodes) {
  comm::TopologySpec t;
  t.nodes = nodes;
  t.gpus_per_node = 8;
  t.nvlink_GBps = 450;
  t.nics_per_node = 8;
  t.nic_Gbps = 400;
  t.pcie_GBps = 64;
  return t;
}

}  // namespace trainsim::step

#endif  // TRAINSIM_TESTS_STEP_DGX_H100_H_
