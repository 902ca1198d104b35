"""Mutual TLS with one certificate per switch: who a peer is comes from its certificate."""

import asyncio
import dataclasses

import grpc
import pytest
from sm_net import TOKEN, RawPeer, agree, fabric_certs, loopback_fabric, make_daemon
from syncmesh.certs import TlsFiles
from syncmesh.messages import Hello
from syncmesh.service import Insecure

from testsupport import async_wait_until, free_port


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


def test_peers_are_named_by_their_certificates_and_strangers_refused(tmp_path):
    fab = loopback_fabric(2, 1, 1, 1)
    certs = fabric_certs(fab, tmp_path / "certs")
    strangers = fabric_certs(fab, tmp_path / "other-ca")  # same names, another CA

    async def scenario():
        ds = {s.name: make_daemon(fab, s.name, certs) for s in fab.switches}
        for d in ds.values():
            await d.start()
        s1 = ds["s1"]
        try:
            await async_wait_until(lambda: len(s1.core.peers.up()) == 2, "TLS sessions up")
            ds["l1"].port_status({2: False})
            await async_wait_until(lambda: agree(ds.values()) and not ds["l2"].core.link_view()[
                "l1:2-s1:1"], "notice over TLS")
            assert s1.core.peers.peers["l1"].incarnation == ds["l1"].core.incarnation
            # a certificate the fabric CA did not sign never gets a stream
            rogue = RawPeer(fab, "s1", "l1", TlsFiles.in_dir(strangers, "l1"))
            with pytest.raises(grpc.aio.AioRpcError) as ei:
                await asyncio.wait_for(rogue.send(Hello(5, 1)), 5)
                await asyncio.wait_for(rogue.recv(), 5)
            assert ei.value.code() == grpc.StatusCode.UNAVAILABLE
            await rogue.close()
            # nor does plaintext, whatever the token
            plain = RawPeer(fab, "s1", "l1", Insecure(TOKEN, "l1"))
            with pytest.raises(grpc.aio.AioRpcError) as ei:
                await asyncio.wait_for(plain.send(Hello(5, 1)), 5)
                await asyncio.wait_for(plain.recv(), 5)
            assert ei.value.code() == grpc.StatusCode.UNAVAILABLE
            await plain.close()
            # a member's certificate is who it is: l2 gets a session as l2, nothing else
            # (the l2 daemon stops first: redialling, it would take its session back at
            # once, whenever the load lets it, and end this stream under the test)
            await ds["l2"].stop()
            before = dict(s1.transport.sessions)
            l2_again = RawPeer(fab, "s1", "l2", TlsFiles.in_dir(certs, "l2"))
            await l2_again.send(Hello(ds["l2"].core.incarnation + 1, 99))
            assert isinstance(await l2_again.recv(), Hello)
            assert s1.transport.sessions["l2"] == before["l2"] + 1
            assert s1.transport.sessions["l1"] == before["l1"]
            await l2_again.close()
        finally:
            for d in ds.values():
                await d.stop()

    run(scenario())


def test_a_leaf_does_not_talk_to_a_server_that_is_not_the_spine_it_dials(tmp_path):
    """s2's daemon listening at s1's address (with its own, valid certificate) gets nothing
    from l1: the TLS target name is the spine l1 means to reach."""
    fab = loopback_fabric(1, 2, 1, 1)
    certs = fabric_certs(fab, tmp_path / "certs")
    # s2 listens where l1 expects s1; s1 itself is somewhere else
    moved = dataclasses.replace(fab, switches=tuple(
        dataclasses.replace(s, syncmesh=f"127.0.0.1:{free_port()}") if s.name == "s1" else
        dataclasses.replace(s, syncmesh=fab.switch("s1").syncmesh) if s.name == "s2" else s
        for s in fab.switches))

    async def scenario():
        l1 = make_daemon(fab, "l1", certs)
        impostor = make_daemon(moved, "s2", certs)
        await impostor.start()
        await l1.start()
        try:
            channel = l1._channels["s1"]._channel
            failed = grpc.ChannelConnectivity.TRANSIENT_FAILURE
            await async_wait_until(lambda: channel.get_state() == failed,
                                   "l1's handshake with the impostor failed")
            assert impostor.transport.sessions == {} and impostor.core.peers.up() == []
            assert l1.core.peers.up() == []
        finally:
            await l1.stop()
            await impostor.stop()

    run(scenario())
