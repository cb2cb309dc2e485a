#!/usr/bin/python3
# The Modbus load for npm run bench:modbus: a pymodbus client reading 2 holding registers in a
# closed loop for SECONDS, one request at a time, over TCP (HOST PORT) or RTU (a serial PORT at
# BAUD). Prints one JSON line: {"n", "errors", "rps", "p50Ms", "p99Ms"}.
# Usage: modbus_load.py tcp HOST PORT UNIT SECONDS | modbus_load.py rtu DEVICE BAUD UNIT SECONDS
import json
import sys
import time

from pymodbus.client import ModbusSerialClient, ModbusTcpClient

kind = sys.argv[1]
if kind == "tcp":
    client = ModbusTcpClient(sys.argv[2], port=int(sys.argv[3]), timeout=2, retries=0)
else:
    client = ModbusSerialClient(sys.argv[2], baudrate=int(sys.argv[3]), timeout=2, retries=0)
    # pymodbus keeps the RTU inter-frame silence (1.75 ms above 19200 baud) before each request;
    # ews's driver does not, so the baseline does not either (a baseline never does work ews skips).
    client.silent_interval = 0
unit, seconds = int(sys.argv[4]), float(sys.argv[5])
client.connect()
lat = []
errors = 0
start = time.perf_counter()
while time.perf_counter() - start < seconds:
    t0 = time.perf_counter()
    try:
        r = client.read_holding_registers(0, 2, slave=unit)
        ok = not r.isError()
    except Exception:
        ok = False
        client.close()
        client.connect()
    if ok:
        lat.append((time.perf_counter() - t0) * 1000)
    else:
        errors += 1
elapsed = time.perf_counter() - start
lat.sort()
pick = lambda p: round(lat[min(len(lat) - 1, int(p * len(lat)))], 2) if lat else None  # noqa: E731
print(json.dumps({"n": len(lat), "errors": errors, "rps": round(len(lat) / elapsed, 1), "p50Ms": pick(0.5), "p99Ms": pick(0.99)}), flush=True)
