// How much CPU this process may use, in cores: the cgroup's CFS quota where one is set (v1 `cpu`
// or v2 `cpu.max`), else one core (the event loop is one thread). Read once at boot.
import { readFileSync } from 'node:fs';

const read = (path: string): string | undefined => {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return undefined;
  }
};

export function cpuCapacityCores(): number {
  const lines = (read('/proc/self/cgroup') ?? '').split('\n');
  for (const line of lines) {
    const [, controllers, path] = line.split(':');
    if (path === undefined) continue;
    if (controllers === '') {
      // cgroup v2: "max 100000" or "20000 100000"
      const [quota, period] = (read(`/sys/fs/cgroup${path}/cpu.max`) ?? '').split(' ');
      if (quota && quota !== 'max' && Number(period) > 0) return Math.min(1, Number(quota) / Number(period));
    } else if (controllers!.split(',').includes('cpu')) {
      const quota = Number(read(`/sys/fs/cgroup/cpu${path}/cpu.cfs_quota_us`));
      const period = Number(read(`/sys/fs/cgroup/cpu${path}/cpu.cfs_period_us`));
      if (quota > 0 && period > 0) return Math.min(1, quota / period);
    }
  }
  return 1;
}
