// V8 flags every board runs with (demo, bench, systemd unit). A small young generation keeps
// young garbage from inflating RSS under load (the default 16 MB semi-space: peak 113 MB; 1-4 MB:
// 77-84 MB, bench/results/dispatch.md), and a capped old space makes V8 collect before it grows.
// 2 MB, not 1: on a master at 20 % of a core, a 1 MB semi-space is scavenged every ~45 ms, so a
// request's objects (20-40 ms in flight) often outlive two scavenges and are promoted; the
// scavenges and the old-space collections they cause took ~14 % of the master's CPU. 2 MB served
// 2 115-2 230 req/s against 1 834-1 947 at 1 MB, with a lower peak RSS (77-78 MB against 80;
// 3 and 4 MB: 82 MB) (bench/results/dispatch-path.md, seventh pass). Old space stays well above
// what the bounded queues and sockets can hold.
// TurboFan inlines at most 230 bytes of bytecode into one function (V8's default: 920). A board at
// 20 % of a core compiles on its own quota: a node that takes over spends its first seconds
// compiling the master's path, and smaller compilations get it there sooner (the first 8 s after
// a takeover, 8 hand pairs: a median of 1 832 req/s against 1 635); settled, 3 boards were not
// slower (6 pairs: medians 2 228 against 2 172 req/s, p99 about 42 ms against 78;
// bench/results/README.md).
// Not a NODE_OPTIONS flag: the systemd unit passes these on its command line.
export const BOARD_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=2', '--max-old-space-size=48', '--max-inlined-bytecode-size-cumulative=230'];
