# run/ benchmarks: the run simulation's Monte Carlo (performance target: 1000 trials of a
# 16,384-GPU, 30-day run in under 5 s on one core).
add_executable(run_bench ${CMAKE_CURRENT_SOURCE_DIR}/run_bench.cc)
target_link_libraries(run_bench PRIVATE trainsim_run benchmark::benchmark)
