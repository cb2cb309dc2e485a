// The route table and the pure decisions beside the dispatch core: who may call, who answers,
// what is a page, who the client is, where a request comes from, and whether a board runs a frame.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clientAddress, isPage, plainAddress, requestOrigin } from '../../master/request-facts.ts';
import type { RequestFrame } from '../../shared/dispatch-frame.ts';
import { DispatchReplayGuard } from '../../shared/dispatch-replay-guard.ts';
import { frameRefusal } from '../../shared/frame-acceptance.ts';
import { answeredHere, callerFor, matchRoute, ROUTES } from '../../shared/routes.ts';

test('the route table: exact paths, one-segment parameters, pages last; HEAD reads as GET', () => {
  assert.equal(matchRoute('GET', '/healthz')?.handler, 'healthz');
  assert.equal(matchRoute('POST', '/api/alarms/pump-fast/ack')?.handler, 'alarm-ack');
  assert.equal(matchRoute('POST', '/api/alarms//ack'), undefined, 'an empty segment is no id');
  assert.equal(matchRoute('GET', '/cgi-bin/devices/pump1')?.handler, 'device-read');
  assert.equal(matchRoute('POST', '/cgi-bin/devices/pump1/start')?.answers, 'device');
  assert.equal(matchRoute('GET', '/cgi-bin/devices/pump1/start'), undefined, 'an action is a POST');
  assert.equal(matchRoute('HEAD', '/app.js')?.handler, 'page');
  assert.equal(matchRoute('GET', '/echo/a/b')?.handler, 'echo');
  assert.equal(matchRoute('GET', '/api/nothing'), undefined, 'no page under /api/');
  assert.equal(matchRoute('GET', '/cgi-bin/nothing'), undefined);
  assert.equal(matchRoute('DELETE', '/'), undefined);
  const keys = ROUTES.map((r) => `${r.method} ${r.path}`);
  assert.equal(new Set(keys).size, keys.length, 'each method and path once');
});

test('who may call: the table, else a viewer to read and an operator to change', () => {
  assert.equal(callerFor('GET', '/'), 'public');
  assert.equal(callerFor('GET', '/metrics'), 'public');
  assert.equal(callerFor('POST', '/api/login'), 'public');
  assert.equal(callerFor('GET', '/api/cluster'), 'viewer');
  assert.equal(callerFor('GET', '/echo'), 'viewer', 'the slow page costs a board like a CGI');
  assert.equal(callerFor('POST', '/cgi-bin/devices/p/start'), 'operator');
  assert.equal(callerFor('POST', '/api/restore'), 'admin');
  assert.equal(callerFor('GET', '/api/unknown'), 'viewer');
  assert.equal(callerFor('PUT', '/anything'), 'operator');
});

test('who answers: a board itself, the master itself, or the queue', () => {
  assert.equal(answeredHere('GET', '/api/alarms', false)?.handler, 'alarms');
  assert.equal(answeredHere('GET', '/api/stats', false), undefined, 'another board passes it to the master');
  assert.equal(answeredHere('GET', '/api/stats', true)?.handler, 'stats');
  assert.equal(answeredHere('GET', '/api/devices', true), undefined, 'queued and dispatched');
  assert.equal(answeredHere('GET', '/', true), undefined);
});

test('request facts: pages adapt, X-Forwarded-For only from a board, internal origins only from a trusted peer', () => {
  assert.equal(isPage('GET', '/'), true);
  assert.equal(isPage('HEAD', '/style.css'), true);
  assert.equal(isPage('GET', '/echo'), true);
  assert.equal(isPage('GET', '/cgi-bin/echo'), false);
  assert.equal(isPage('GET', '/api/devices'), false);
  assert.equal(isPage('POST', '/'), false);
  const boards = new Set(['10.0.0.1', '10.0.0.2']);
  assert.equal(clientAddress('10.0.0.9', '1.2.3.4', boards), '10.0.0.9', 'a client cannot claim an address');
  assert.equal(clientAddress('10.0.0.2', '192.168.1.7, 10.0.0.2', boards), '192.168.1.7');
  assert.equal(clientAddress('10.0.0.2', undefined, boards), '10.0.0.2');
  assert.equal(plainAddress('::ffff:10.0.0.2'), '10.0.0.2');
  const trusted = new Set(['127.0.0.1', ...boards]);
  assert.equal(requestOrigin('schedule', '127.0.0.1', trusted), 'schedule');
  assert.equal(requestOrigin('mqtt', '10.0.0.2', trusted), 'mqtt');
  assert.equal(requestOrigin('schedule', '10.0.0.9', trusted), 'client', 'a client cannot claim to be a schedule');
  assert.equal(requestOrigin('nonsense', '127.0.0.1', trusted), 'client');
  assert.equal(requestOrigin(['schedule', 'mqtt'], '127.0.0.1', trusted), 'client');
});

test('frame acceptance: this board, this boot, the followed master or a newer one, once, a known class, a canonical path', () => {
  const frame = (over: Partial<RequestFrame>): RequestFrame =>
    ({ type: 'request', id: 1, master: 0, term: 5, target: 1, epoch: 7, cls: 0, level: 3, origin: 'client', method: 'GET', url: '/', headers: [], body: Buffer.alloc(0), ...over }) as RequestFrame;
  const board = { self: 1, bootEpoch: 7, term: 5, master: 0, classes: 2 };
  const guard = new DispatchReplayGuard(64);
  assert.equal(frameRefusal(frame({}), board, guard), undefined);
  assert.equal(frameRefusal(frame({}), board, guard), 'replay');
  assert.equal(frameRefusal(frame({ id: 2, target: 2 }), board, guard), 'target');
  assert.equal(frameRefusal(frame({ id: 3, epoch: 6 }), board, guard), 'old-boot');
  assert.equal(frameRefusal(frame({ id: 4, master: 1 }), board, guard), 'self');
  assert.equal(frameRefusal(frame({ id: 5, term: 4 }), board, guard), 'stale');
  assert.equal(frameRefusal(frame({ id: 6, master: 2 }), board, guard), 'stale', 'the same term from another master');
  assert.equal(frameRefusal(frame({ id: 7, master: 2, term: 6 }), board, guard), undefined, 'a newer term is followed');
  assert.equal(frameRefusal(frame({ id: 8, cls: 2 }), board, guard), 'class');
  assert.equal(frameRefusal(frame({ id: 9, url: '/a/../b' }), board, guard), 'target-path');
});

test('matchRoute: exact paths, {name} segments, /prefix/* and the pages fallback, the same answer asked twice in a row or interleaved', () => {
  const h = (m: string, p: string) => matchRoute(m, p)?.handler;
  assert.equal(h('GET', '/api/cluster'), 'cluster');
  assert.equal(h('HEAD', '/api/cluster'), 'cluster');
  assert.equal(h('POST', '/api/alarms/pump-hot/ack'), 'alarm-ack');
  assert.equal(h('POST', '/api/alarms//ack'), undefined, 'an empty segment is no {id}');
  assert.equal(h('POST', '/cgi-bin/devices/pump1/start'), 'device-action');
  assert.equal(h('GET', '/cgi-bin/devices/pump1/start'), undefined);
  assert.equal(h('GET', '/echo/a/b'), 'echo');
  assert.equal(h('GET', '/index.html'), 'page');
  assert.equal(h('GET', '/api/nothing'), undefined, 'not a page');
  for (let i = 0; i < 3; i++) {
    assert.equal(h('GET', '/api/devices'), 'devices');
    assert.equal(h('POST', '/api/devices'), undefined);
    assert.equal(h('GET', '/api/devices'), 'devices');
  }
});
