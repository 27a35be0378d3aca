# sweep: every layout of GPT-3 175B on 1024 A100s through the estimator (target: all layouts in
# under 10 s on one core), and the whole sweep with the top 10 confirmed by the step simulation.
add_executable(sweep_bench ${CMAKE_CURRENT_SOURCE_DIR}/sweep_bench.cc)
target_link_libraries(sweep_bench PRIVATE trainsim_sweep benchmark::benchmark)
