#!/usr/bin/python3
# A CGI program for ews (RFC 3875): answers JSON with what it was asked and by whom.
# Put it in a board's cgi directory (cgi.dir, or boards[].cgiDir), make it executable, and ask
#   curl -H "authorization: Bearer $T" 'http://127.0.0.1:8081/cgi-bin/meter.py/flow?unit=l'
import json
import os
import sys

body = sys.stdin.read(int(os.environ.get("CONTENT_LENGTH") or 0))
answer = {
    "board": os.environ["EWS_BOARD"],
    "path": os.environ.get("PATH_INFO", ""),
    "query": os.environ.get("QUERY_STRING", ""),
    "user": os.environ.get("REMOTE_USER"),
    "client": os.environ["REMOTE_ADDR"],
    "body_bytes": len(body),
}
print("Content-Type: application/json")
print()
print(json.dumps(answer))
