#!/usr/bin/python3
# A third-party Modbus TCP client (pymodbus), driven by JSON lines on stdin, one JSON line out per
# request: how an HMI or SCADA talks to the cluster's gateway in the tests. Usage:
#   pymodbus_client.py HOST PORT [TIMEOUT_S [RETRIES]]   (1 s and 3 retries by default)
# In:  {"op": "read", "unit": 3, "address": 0, "count": 2}
#      {"op": "write", "unit": 3, "address": 8, "values": [16416, 0]}
#      {"op": "poll", "unit": 3, "address": 0, "count": 2, "everyMs": 100, "seconds": 5}
# Out: {"ok": true, "registers": [...]} | {"ok": true} | {"ok": false, "exception": 10} |
#      {"ok": false, "error": "..."}; a poll prints one line per read with "t" (ms since the epoch).
import json
import sys
import time

from pymodbus.client import ModbusTcpClient
from pymodbus.pdu import ExceptionResponse

timeout = float(sys.argv[3]) if len(sys.argv) > 3 else 1
retries = int(sys.argv[4]) if len(sys.argv) > 4 else 3

def new_client():
    return ModbusTcpClient(sys.argv[1], port=int(sys.argv[2]), timeout=timeout, retries=retries, retry_on_empty=retries > 0)


client = new_client()


def run(cmd):
    global client
    try:
        if not client.is_socket_open():
            client.connect()
        if cmd["op"] == "read":
            r = client.read_holding_registers(cmd["address"], cmd["count"], slave=cmd["unit"])
        else:
            r = client.write_registers(cmd["address"], cmd["values"], slave=cmd["unit"])
    except Exception as e:  # a connection lost mid-request: a new client for the next one
        # (pymodbus 3.0.0rc1 keeps state across a reset that costs the next request its whole timeout)
        client.close()
        client = new_client()
        return {"ok": False, "error": str(e)}
    if isinstance(r, ExceptionResponse):
        return {"ok": False, "exception": r.exception_code}
    if r.isError():
        client.close()
        client = new_client()
        return {"ok": False, "error": str(r)}
    return {"ok": True, "registers": list(r.registers)} if cmd["op"] == "read" else {"ok": True}


print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    cmd = json.loads(line)
    if cmd["op"] == "poll":
        end = time.time() + cmd["seconds"]
        while time.time() < end:
            out = run({**cmd, "op": "read"})
            out["t"] = int(time.time() * 1000)
            print(json.dumps(out), flush=True)
            time.sleep(cmd["everyMs"] / 1000)
        print(json.dumps({"done": True}), flush=True)
    else:
        print(json.dumps(run(cmd)), flush=True)
