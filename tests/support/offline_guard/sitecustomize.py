"""Offline guard for every child process the suite starts (it is put first on PYTHONPATH).

Connections and name lookups that leave the machine raise ``OfflineGuardError``; loopback stays open because
distributed rendezvous (gloo, torchrun, accelerate) uses it. Every refused attempt is appended to the file
named by ``OFFLINE_GUARD_LOG`` so a test can assert that nothing tried, even when a library swallowed the error.
"""

import ipaddress
import os
import socket

_LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback", ""}


class OfflineGuardError(OSError):
    pass


def _is_local_host(host) -> bool:
    if host is None:
        return True
    if isinstance(host, bytes):
        host = host.decode(errors="replace")
    host = str(host).strip("[]").split("%")[0]
    if host.lower() in _LOCAL_NAMES or host == socket.gethostname():
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def _refuse(what: str):
    log = os.environ.get("OFFLINE_GUARD_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(f"{os.getpid()} {what}\n")
    raise OfflineGuardError(f"offline guard: blocked {what}")


_real_getaddrinfo = socket.getaddrinfo
_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _guarded_getaddrinfo(host, *args, **kwargs):
    if not _is_local_host(host):
        _refuse(f"getaddrinfo({host!r})")
    return _real_getaddrinfo(host, *args, **kwargs)


def _check_address(sock, address):
    if sock.family in (socket.AF_INET, socket.AF_INET6) and isinstance(address, tuple):
        if not _is_local_host(address[0]):
            _refuse(f"connect({address[0]!r}, {address[1]!r})")


def _guarded_connect(self, address):
    _check_address(self, address)
    return _real_connect(self, address)


def _guarded_connect_ex(self, address):
    _check_address(self, address)
    return _real_connect_ex(self, address)


socket.getaddrinfo = _guarded_getaddrinfo
socket.socket.connect = _guarded_connect
socket.socket.connect_ex = _guarded_connect_ex

_real_gethostbyname = socket.gethostbyname
_real_gethostbyname_ex = socket.gethostbyname_ex


def _guarded_gethostbyname(host):
    if not _is_local_host(host):
        _refuse(f"gethostbyname({host!r})")
    return _real_gethostbyname(host)


def _guarded_gethostbyname_ex(host):
    if not _is_local_host(host):
        _refuse(f"gethostbyname_ex({host!r})")
    return _real_gethostbyname_ex(host)


socket.gethostbyname = _guarded_gethostbyname
socket.gethostbyname_ex = _guarded_gethostbyname_ex
