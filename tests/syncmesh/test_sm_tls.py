"""Mutual TLS between daemons (on top of the token): certificates from a test CA made with openssl."""

import asyncio
import shutil
import subprocess

import grpc
import pytest
from sm_net import TOKEN, agree, loopback_fabric, make_daemon
from syncmesh import wire
from syncmesh.messages import Hello
from syncmesh.service import PeerChannel, TlsFiles
from testsupport import async_wait_until

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")


EC = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1")


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def make_ca(tmp_path, name):
    openssl("req", "-x509", *EC, "-nodes", "-days", "2", "-subj", f"/CN={name}",
            "-keyout", f"{name}.key", "-out", f"{name}.pem", cwd=tmp_path)
    return tmp_path / f"{name}.pem"


def make_cert(tmp_path, ca, name):
    openssl("req", *EC, "-nodes", "-subj", f"/CN={name}",
            "-keyout", f"{name}.key", "-out", f"{name}.csr", cwd=tmp_path)
    (tmp_path / "san.ext").write_text("subjectAltName=DNS:syncmesh\n")
    openssl("x509", "-req", "-in", f"{name}.csr", "-CA", ca.name, "-CAkey",
            ca.name.replace(".pem", ".key"), "-CAcreateserial", "-days", "2",
            "-extfile", "san.ext", "-out", f"{name}.pem", cwd=tmp_path)
    return TlsFiles(ca, tmp_path / f"{name}.pem", tmp_path / f"{name}.key")


def test_daemons_talk_over_mutual_tls_and_refuse_strangers(tmp_path):
    ca = make_ca(tmp_path, "fabric-ca")
    tls = make_cert(tmp_path, ca, "node")
    stranger_ca = make_ca(tmp_path, "other-ca")
    stranger = make_cert(tmp_path, stranger_ca, "stranger")
    fab = loopback_fabric(2, 1, 1, 1)

    async def scenario():
        ds = {s.name: make_daemon(fab, s.name, tls=tls) for s in fab.switches}
        for d in ds.values():
            await d.start()
        try:
            await async_wait_until(lambda: len(ds["s1"].core.peers.up()) == 2, "TLS sessions up")
            ds["l1"].port_status({2: False})
            await async_wait_until(lambda: agree(ds.values()) and not ds["l2"].core.link_view()[
                "l1:2-s1:1"], "notice over TLS")
            # a client whose certificate the fabric CA did not sign is refused by TLS itself
            rogue = PeerChannel(fab.switch("s1").syncmesh, TOKEN, TlsFiles(
                stranger_ca, stranger.cert, stranger.key), timeout=1)
            with pytest.raises(grpc.aio.AioRpcError) as ei:
                await rogue.call("SayHello", wire.encode(Hello("l1", 5, 1)))
            assert ei.value.code() in (grpc.StatusCode.UNAVAILABLE,
                                       grpc.StatusCode.DEADLINE_EXCEEDED)
            await rogue.close()
            # plaintext to a TLS daemon fails too
            plain = PeerChannel(fab.switch("s1").syncmesh, TOKEN, timeout=1)
            with pytest.raises(grpc.aio.AioRpcError):
                await plain.call("SayHello", wire.encode(Hello("l1", 5, 1)))
            await plain.close()
            assert ds["s1"].core.peers.peers["l1"].incarnation == ds["l1"].core.incarnation
        finally:
            for d in ds.values():
                await d.stop()

    asyncio.run(asyncio.wait_for(scenario(), 60))
