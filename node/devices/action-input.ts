// Checks a control request's body against the action it names. Pure; errors are 400s with a message.
import type { ActionInput, DeviceConfig } from '../../shared/device-config.ts';
import { EwsError } from '../../shared/errors.ts';

export interface ResolvedAction {
  name: string;
  value: number | boolean | undefined;
}

export function resolveAction(dev: DeviceConfig, actionName: string, body: Buffer): ResolvedAction {
  const action = dev.actions.find((a) => a.name === actionName);
  if (!action) throw new EwsError('NOT_FOUND', `device ${dev.id} has no action "${actionName}" (it has: ${dev.actions.map((a) => a.name).join(', ') || 'none'})`);
  const input: ActionInput | undefined = action.input;
  let parsed: unknown = {};
  if (body.length > 0) {
    try {
      parsed = JSON.parse(body.toString('utf8'));
    } catch {
      throw new EwsError('BAD_REQUEST', 'the body must be JSON, e.g. {"value": 42}');
    }
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new EwsError('BAD_REQUEST', 'the body must be a JSON object, e.g. {"value": 42}');
  const value = (parsed as { value?: unknown }).value;
  if (!input) {
    if (value !== undefined) throw new EwsError('BAD_REQUEST', `action "${actionName}" takes no value`);
    return { name: actionName, value: 'fixed' in action ? action.fixed : undefined };
  }
  if (value === undefined) throw new EwsError('BAD_REQUEST', `action "${actionName}" needs a "value"`);
  if (input.type === 'boolean') {
    if (typeof value !== 'boolean') throw new EwsError('BAD_REQUEST', `"value" must be true or false`);
    return { name: actionName, value };
  }
  if (typeof value !== 'number' || !Number.isFinite(value)) throw new EwsError('BAD_REQUEST', `"value" must be a number`);
  if (input.min !== undefined && value < input.min) throw new EwsError('BAD_REQUEST', `"value" ${value} is below the minimum ${input.min}`);
  if (input.max !== undefined && value > input.max) throw new EwsError('BAD_REQUEST', `"value" ${value} is above the maximum ${input.max}`);
  if (input.step !== undefined) {
    const units = value / input.step;
    if (Math.abs(units - Math.round(units)) > 1e-9)
      throw new EwsError('BAD_REQUEST', `"value" ${value} must be a whole multiple of ${input.step} (the register holds whole units), not rounded silently`);
  }
  return { name: actionName, value };
}

/** A number as a device reads it: plain decimal digits, never an exponent (1e-7 → 0.0000001). */
export function plainDecimal(v: number): string {
  const s = String(v);
  const m = /^(-?)(\d)(?:\.(\d+))?e([+-]\d+)$/.exec(s);
  if (!m) return s;
  const [, sign, lead, frac = '', expText] = m;
  const exp = Number(expText);
  const digits = lead! + frac;
  if (exp < 0) return `${sign}0.${'0'.repeat(-exp - 1)}${digits}`;
  return exp >= frac.length ? `${sign}${digits}${'0'.repeat(exp - frac.length)}` : `${sign}${digits.slice(0, exp + 1)}.${digits.slice(exp + 1)}`;
}
