# comm/ benchmarks: expanding and simulating collectives on the flow network.
add_executable(comm_bench ${CMAKE_CURRENT_SOURCE_DIR}/comm_bench.cc)
target_link_libraries(comm_bench PRIVATE trainsim_comm benchmark::benchmark)
