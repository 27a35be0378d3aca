# run/ benchmarks: the run simulation's Monte Carlo (its performance target is in bench/README.md).
add_executable(run_bench ${CMAKE_CURRENT_SOURCE_DIR}/run_bench.cc)
target_link_libraries(run_bench PRIVATE trainsim_run benchmark::benchmark)
