# checkpoint/ benchmarks: the run simulation's Monte Carlo (issue 5's performance target).
add_executable(run_bench ${CMAKE_CURRENT_SOURCE_DIR}/run_bench.cc)
target_link_libraries(run_bench PRIVATE trainsim_checkpoint benchmark::benchmark)
