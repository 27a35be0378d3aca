# sim/ benchmarks: event-queue and engine throughput in the hold model.
add_executable(engine_bench ${CMAKE_CURRENT_SOURCE_DIR}/engine_bench.cc)
target_link_libraries(engine_bench PRIVATE trainsim_sim benchmark::benchmark)
