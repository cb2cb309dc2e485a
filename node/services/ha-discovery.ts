// Home Assistant MQTT discovery: one retained config message per point and action, so a Home
// Assistant on the same broker shows every device with no YAML. Points become sensors (numbers)
// or binary sensors (on/off); actions become numbers (a value), switches (on/off) or buttons.
// State comes from the bridge's retained device state; commands go to its .../set topics;
// availability is the status of the boards the device is attached to (any one online).
import type { Config } from '../../shared/config.ts';
import type { DeviceConfig } from '../../shared/device-config.ts';

export interface DiscoveryMessage {
  topic: string;
  payload: string;
}

const slug = (s: string) => s.replace(/[^A-Za-z0-9_-]/g, '_');
const isBoolean = (d: DeviceConfig, point: string) => d.driver !== 'line' && d.points.some((p) => p.name === point && (p.kind === 'coil' || p.kind === 'discrete'));

export function discoveryMessages(cfg: Config, discoveryPrefix: string, prefix: string): DiscoveryMessage[] {
  const node = slug(`ews_${cfg.cluster.name}`);
  const out: DiscoveryMessage[] = [];
  for (const d of cfg.devices) {
    const base = {
      device: { identifiers: [`${node}_${slug(d.id)}`], name: d.name, manufacturer: 'ews', model: d.driver },
      availability: d.attach.map((a) => ({ topic: `${prefix}/boards/${a.boardId}/status` })),
      availability_mode: 'any',
      state_topic: `${prefix}/devices/${d.id}/state`,
    };
    const add = (component: string, object: string, config: Record<string, unknown>) =>
      out.push({
        topic: `${discoveryPrefix}/${component}/${node}/${slug(`${d.id}_${object}`)}/config`,
        payload: JSON.stringify({ ...base, unique_id: `${node}_${slug(`${d.id}_${object}`)}`, object_id: slug(`${d.id}_${object}`), ...config }),
      });
    for (const p of d.points) {
      if (isBoolean(d, p.name)) add('binary_sensor', p.name, { name: p.name, value_template: `{{ 'ON' if value_json.points.${p.name} else 'OFF' }}` });
      else add('sensor', p.name, { name: p.name, value_template: `{{ value_json.points.${p.name} }}`, ...(p.unit ? { unit_of_measurement: p.unit } : {}), state_class: 'measurement' });
    }
    for (const a of d.actions) {
      const command_topic = `${prefix}/devices/${d.id}/${a.name}/set`;
      if (a.input?.type === 'number')
        add('number', a.name, {
          name: a.name,
          command_topic,
          min: a.input.min ?? 0,
          max: a.input.max ?? 100,
          ...('write' in a ? { value_template: `{{ value_json.points.${a.write} }}` } : { state_topic: undefined }),
        });
      else if (a.input?.type === 'boolean')
        add('switch', a.name, {
          name: a.name,
          command_topic,
          payload_on: 'true',
          payload_off: 'false',
          ...('write' in a ? { value_template: `{{ 'true' if value_json.points.${a.write} else 'false' }}`, state_on: 'true', state_off: 'false' } : {}),
        });
      else add('button', a.name, { name: a.name, command_topic, payload_press: '' });
    }
  }
  return out;
}
