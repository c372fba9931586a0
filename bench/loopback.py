"""Loopback helpers shared by the Python bench scripts (imported from their folder)."""
import socket
import time


def wait_port(port, timeout=20):
    """Returns once something accepts TCP connections on 127.0.0.1:port; exits after `timeout` seconds."""
    end = time.time() + timeout
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"port {port} did not open")


def recv_until(sock, done, bufsize=4096):
    """Reads from `sock` until `done(bytes read so far)`; OSError when the peer closes first."""
    buf = b""
    while not done(buf):
        chunk = sock.recv(bufsize)
        if not chunk:
            raise OSError(f"the peer closed the connection after {len(buf)} bytes")
        buf += chunk
    return buf
