// `ews start` with a cable the parent process can pull (the demo and the tests): the same board,
// its network given by dev/cable.ts, controlled over the IPC channel:
//   { cut: boolean }                      pull or replug the cable
//   { device: id, plugged: boolean }      pull or replug a simulated device's serial cable
//   { block: ms }                         stall the request thread (a long synchronous task)
// With --simulate-devices each device's port is answered by its configured simulator.
import { parseArgs } from 'node:util';
import { fail, startBoard } from '../node/start.ts';
import { Cable } from './cable.ts';
import { type SimulatedPorts, simulatedPortFactory } from './simulated-ports.ts';

const USAGE = 'usage: cabled-board start --config FILE --board ID [--simulate-devices]';

async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  if (cmd !== 'start') return fail(USAGE);
  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseArgs({ args: rest, options: { config: { type: 'string' }, board: { type: 'string' }, 'simulate-devices': { type: 'boolean' } }, strict: true }).values;
  } catch (e) {
    return fail(`${(e as Error).message}\n${USAGE}`);
  }
  const cable = new Cable();
  let simulated: SimulatedPorts | undefined;
  return startBoard(values, USAGE, {
    transport: cable.transport,
    planeTransport: new URL('./cable-plane.ts', import.meta.url).href,
    openPort:
      values['simulate-devices'] === true
        ? (cfg, board) => {
            simulated = simulatedPortFactory(cfg.devices, board);
            return simulated.factory;
          }
        : undefined,
    started: (board) => {
      process.on('message', (m: unknown) => {
        if (typeof m !== 'object' || m === null) return;
        if ('cut' in m) {
          cable.pulled = Boolean((m as { cut: unknown }).cut);
          if (cable.pulled) board.dropConnections();
          board.log.warn({ cut: cable.pulled }, cable.pulled ? 'network cut' : 'network restored');
        }
        if ('block' in m) {
          const until = Date.now() + Number((m as { block: unknown }).block);
          while (Date.now() < until) {
            /* a synchronous task that will not yield */
          }
        }
        if ('device' in m && 'plugged' in m && simulated) {
          const id = String((m as { device: unknown }).device);
          const plugged = Boolean((m as { plugged: unknown }).plugged);
          const at = board.cfg.devices.find((d) => d.id === id)?.attach.find((a) => a.board === board.self.index);
          if (!at) return;
          if (plugged) simulated.plug(at.port);
          else simulated.unplug(at.port);
          board.log.warn({ device: id, plugged }, plugged ? 'device plugged back in' : 'device unplugged');
        }
      });
    },
  });
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
    setImmediate(() => process.exit(code));
  },
  (err: unknown) => {
    process.stderr.write(`cabled-board: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
