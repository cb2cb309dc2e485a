import assert from 'node:assert/strict';
import test from 'node:test';
import { ServiceTimes } from '../../master/service-time.ts';

test('service times: the first answer sets the mean; then an average and its mean deviation (gains 0.2 and 0.25, as TCP keeps SRTT and RTTVAR)', () => {
  const s = new ServiceTimes(2);
  assert.equal(s.likelyMs(0), 0, 'none seen: 0');
  s.observe(0, 100);
  assert.deepEqual([s.meanMs[0], s.devMs[0], s.likelyMs(0)], [100, 0, 100], 'one answer says nothing about the spread');
  s.observe(0, 140);
  assert.deepEqual([s.meanMs[0], s.devMs[0], s.likelyMs(0)], [108, 10, 128]);
  s.observe(0, 108);
  assert.deepEqual([s.meanMs[0], s.devMs[0]], [108, 7.5], 'an answer at the mean narrows the spread');
  assert.deepEqual([s.meanMs[1], s.devMs[1]], [0, 0], 'each class on its own');
});
