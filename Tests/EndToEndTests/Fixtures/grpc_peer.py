#!/usr/bin/env python3
"""gRPC peers for cookie-proxy's end-to-end tests (grpcio from PyPI; no generated code: bytes in, bytes out).

server [CERT KEY]: a server for /test.Echo/Say on 127.0.0.1 (any free port; TLS with CERT and KEY when given)
  that answers b"echo:" + the request, with initial metadata set-cookie: sid=1; Path=/ and trailing metadata
  x-trailer: done; prints "PORT <n>" and runs until killed.
client TARGET [CA]: one call to TARGET (host:port; over TLS trusting CA when given, through $https_proxy if set);
  prints a JSON object: reply, set-cookie (initial metadata), trailer (trailing metadata), code."""
import json, sys, time
from concurrent import futures

import grpc

METHOD = "/test.Echo/Say"


def serve(args):
    def say(request, context):
        context.send_initial_metadata((("set-cookie", "sid=1; Path=/"),))
        context.set_trailing_metadata((("x-trailer", "done"),))
        return b"echo:" + request

    handler = grpc.method_handlers_generic_handler(
        "test.Echo", {"Say": grpc.unary_unary_rpc_method_handler(say)})
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers((handler,))
    if args:
        cert, key = (open(p, "rb").read() for p in args[:2])
        port = server.add_secure_port("127.0.0.1:0", grpc.ssl_server_credentials(((key, cert),)))
    else:
        port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print("PORT", port, flush=True)
    while True:
        time.sleep(3600)


def call(args):
    target = args[0]
    if len(args) > 1:
        credentials = grpc.ssl_channel_credentials(root_certificates=open(args[1], "rb").read())
        channel = grpc.secure_channel(target, credentials)
    else:
        channel = grpc.insecure_channel(target)
    say = channel.unary_unary(METHOD)
    try:
        reply, call = say.with_call(b"hello", timeout=20)
        initial = dict(call.initial_metadata())
        trailing = dict(call.trailing_metadata())
        print(json.dumps({"reply": reply.decode(), "set-cookie": initial.get("set-cookie"),
                          "trailer": trailing.get("x-trailer"), "code": call.code().name}))
    except grpc.RpcError as error:
        print(json.dumps({"code": error.code().name, "details": error.details()}))


if __name__ == "__main__":
    {"server": serve, "client": call}[sys.argv[1]](sys.argv[2:])
