// Checks a control request's body against the action it names. Pure; errors are 400s with a message.
import type { ActionInput, DeviceConfig } from '../../shared/device-config.ts';
import { EwsError } from '../../shared/errors.ts';

export interface ResolvedAction { name: string; value: number | boolean | undefined }

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
  return { name: actionName, value };
}
