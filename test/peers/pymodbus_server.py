#!/usr/bin/python3
# A third-party Modbus RTU server (pymodbus) on a serial line, for testing our driver against.
# coils 0-15 (0 off), discrete inputs 0-15 (1,0,1,0,...), holding 0-15 ([7, 1500, 0, then a float32
# 123.456 high word first at 3-4, an int32 -2 low word first at 5-6, 0...]),
# input registers 0-15 ([215, 65535, 0...]). Address 16 and above: exception 2.
# Usage: pymodbus_server.py PORT [BAUD] (9600 by default).
import asyncio
import sys

from pymodbus.datastore import ModbusSequentialDataBlock, ModbusServerContext, ModbusSlaveContext
from pymodbus.server import StartAsyncSerialServer
from pymodbus.transaction import ModbusRtuFramer

store = ModbusSlaveContext(
    di=ModbusSequentialDataBlock(0, [1, 0] * 8),
    co=ModbusSequentialDataBlock(0, [0] * 16),
    hr=ModbusSequentialDataBlock(0, [7, 1500, 0, 0x42F6, 0xE979, 0xFFFE, 0xFFFF] + [0] * 9),
    ir=ModbusSequentialDataBlock(0, [215, 65535] + [0] * 14),
    zero_mode=True,
)
context = ModbusServerContext(slaves=store, single=True)
print("ready", flush=True)
asyncio.run(StartAsyncSerialServer(context=context, port=sys.argv[1], framer=ModbusRtuFramer, baudrate=int(sys.argv[2]) if len(sys.argv) > 2 else 9600))
