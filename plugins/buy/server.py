#!/usr/bin/env python3
"""The example `buy` plugin: a tiny HTTP server that takes hearth's plugin calls.

hearth POSTs each call as JSON to /run:
    {"plugin_id", "capability_id", "parameters": {...}, "user": {"id", "name"}, "conversation_id",
     "idempotency_key"}
and this answers {"text": "..."} after appending the order to orders.jsonl next to this file
(or to --orders). A real shop integration would place the order here instead. A call whose
idempotency_key was seen before is answered as before and places nothing: hearth never sends a
completed call again, and a shop should not trust that alone.

    python3 plugins/buy/server.py            # listens on 127.0.0.1:9100, as plugin.yaml says
    python3 plugins/buy/server.py --port 0   # any free port; the chosen one is printed
"""

import argparse
import json
import pathlib
import sys
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REQUIRED = ("item", "address", "phone", "contact_name")


def placed_keys(orders: pathlib.Path):
    """The idempotency keys of the orders placed so far."""
    if not orders.exists():
        return set()
    with orders.open(encoding="utf-8") as file:
        return {json.loads(line).get("idempotency_key") for line in file if line.strip()}


def make_handler(orders: pathlib.Path):
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            if self.path != "/run":
                return self.answer(404, {"error": f"no route {self.path}"})
            try:
                length = int(self.headers.get("Content-Length", "0"))
                call = json.loads(self.rfile.read(length))
            except (ValueError, json.JSONDecodeError) as error:
                return self.answer(400, {"error": f"the call is not JSON: {error}"})
            if call.get("capability_id") != "place_order":
                return self.answer(400, {"error": f"no capability {call.get('capability_id')!r}"})
            parameters = call.get("parameters") or {}
            missing = [name for name in REQUIRED if not parameters.get(name)]
            if missing:
                return self.answer(
                    200,
                    {"ask_user": True, "missing_parameters": missing,
                     "text": "To place the order I still need: " + ", ".join(missing) + "."},
                )
            text = (f"Order placed: {parameters['item']} for {parameters['contact_name']}, "
                    f"delivered to {parameters['address']}.")
            key = call.get("idempotency_key")
            if key and key in placed_keys(orders):
                return self.answer(200, {"text": text})
            order = {
                "at": datetime.now(timezone.utc).isoformat(),
                "member": (call.get("user") or {}).get("id"),
                "idempotency_key": key,
                **parameters,
            }
            with orders.open("a", encoding="utf-8") as file:
                file.write(json.dumps(order) + "\n")
            return self.answer(200, {"text": text})

        def answer(self, status, body):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    return Handler


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9100)
    parser.add_argument("--orders", default=str(pathlib.Path(__file__).with_name("orders.jsonl")))
    options = parser.parse_args()
    server = ThreadingHTTPServer((options.host, options.port), make_handler(pathlib.Path(options.orders)))
    print(f"buy plugin listening on http://{options.host}:{server.server_port}/run", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
