#!/usr/bin/python3
# A third-party Modbus TCP server (pymodbus) holding 32-bit values in both word orders, for testing
# our modbus-tcp driver against.
# holding 0-1 float32 123.456 high word first, 2-3 the same low word first, 4-5 int32 -2 high word
# first, 6-7 int32 -100000 low word first, 8-9 a float32 setpoint (0), 10 uint16 7; input 0-1
# uint32 70000 high word first. Addresses 20 and above: exception 2. Every write to the holding
# registers is printed as a JSON line {"set": address, "values": [...]}, so the test sees the
# datastore itself. Unit id 1. Usage: pymodbus_tcp_server.py PORT [tcp|rtu] [HOST] (HOST to bind,
# 127.0.0.1 by default).
import asyncio
import json
import sys

from pymodbus.datastore import ModbusSequentialDataBlock, ModbusServerContext, ModbusSlaveContext
from pymodbus.server import StartAsyncTcpServer
from pymodbus.transaction import ModbusRtuFramer, ModbusSocketFramer


class Printed(ModbusSequentialDataBlock):
    def setValues(self, address, values):
        super().setValues(address, values)
        print(json.dumps({"set": address, "values": list(values)}), flush=True)


holding = [0x42F6, 0xE979, 0xE979, 0x42F6, 0xFFFF, 0xFFFE, 0x7960, 0xFFFE, 0, 0, 7] + [0] * 9
store = ModbusSlaveContext(
    di=ModbusSequentialDataBlock(0, [0] * 20),
    co=ModbusSequentialDataBlock(0, [0] * 20),
    hr=Printed(0, holding),
    ir=ModbusSequentialDataBlock(0, [0x0001, 0x1170] + [0] * 18),
    zero_mode=True,
)
context = ModbusServerContext(slaves={1: store}, single=False)
framer = ModbusRtuFramer if len(sys.argv) > 2 and sys.argv[2] == "rtu" else ModbusSocketFramer
print("ready", flush=True)
# Reused at once after a restart (the test stops and starts it on the same port under a live client).
asyncio.run(StartAsyncTcpServer(context=context, address=(sys.argv[3] if len(sys.argv) > 3 else "127.0.0.1", int(sys.argv[1])), framer=framer, allow_reuse_address=True))
