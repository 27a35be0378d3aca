# step: one GPT-3 175B step on 1024 A100s through the step simulation (target < 1 s, < 1 GiB).
add_executable(step_bench ${CMAKE_CURRENT_SOURCE_DIR}/step_bench.cc)
target_link_libraries(step_bench PRIVATE trainsim_step benchmark::benchmark)
# step_cpu: the thread CPU of one scenario's step simulation, any layout (--set as `trainsim run`).
add_executable(step_cpu ${CMAKE_CURRENT_SOURCE_DIR}/step_cpu.cc)
target_link_libraries(step_cpu PRIVATE trainsim_session)
