// V8 flags every board runs with (demo, bench, systemd unit). Measured in bench/results/dispatch.md:
// a 1 MB semi-space keeps young-generation garbage from inflating RSS under load (peak 113 MB → ~68 MB
// at the same throughput, and shorter GC pauses), and a capped old space makes V8 collect before
// it grows. Old space stays well above what the bounded queues and sockets can hold.
export const BOARD_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=1', '--max-old-space-size=48'];
