"""The ``syncmesh`` command: certificates, clear errors, a real daemon process killed and
restarted."""

import asyncio
import os
import signal
import socket
import stat
import subprocess
import sys

from sm_net import TOKEN, http_get, loopback_fabric, make_daemon
from syncmesh.certs import TlsFiles, cert_name, check
from syncmesh.metrics import parse

from fabricmodel import dump
from testsupport import async_wait_until, free_ports, stop_processes

CMD = [sys.executable, "-m", "syncmesh.cli"]


def syncmesh(*args, env=None, timeout=60):
    return subprocess.run(CMD + list(args), capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def test_certs_makes_one_identity_per_switch_and_keeps_what_exists(tmp_path):
    from cryptography import x509

    fab = tmp_path / "f.yaml"
    dump(loopback_fabric(2, 1, 1, 1), fab)
    out = tmp_path / "certs"
    r = syncmesh("certs", "--fabric", str(fab), "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert "8 file(s) written" in r.stdout
    for name in ("l1", "l2", "s1"):
        files = TlsFiles.in_dir(out, name)
        check(files, name)  # signed by the CA, the key matches, names the switch
        assert cert_name(x509.load_pem_x509_certificate(files.cert.read_bytes())) == name
        assert stat.S_IMODE(files.key.stat().st_mode) == 0o600
    assert stat.S_IMODE((out / "ca.key").stat().st_mode) == 0o600
    before = (out / "l1.pem").read_bytes()
    (out / "l2.pem").unlink()
    (out / "l2.key").unlink()
    r = syncmesh("certs", "--fabric", str(fab), "--out", str(out))
    assert r.returncode == 0 and "2 file(s) written" in r.stdout  # only l2's, same CA
    assert (out / "l1.pem").read_bytes() == before
    check(TlsFiles.in_dir(out, "l2"), "l2")
    r = syncmesh("certs", "--fabric", str(fab), "--out", str(out), "--switch", "zz")
    assert r.returncode == 2 and "no switch zz" in r.stderr


def test_run_needs_an_identity_that_is_its_own(tmp_path):
    fab = tmp_path / "f.yaml"
    dump(loopback_fabric(2, 1, 1, 1), fab)
    out = tmp_path / "certs"
    assert syncmesh("certs", "--fabric", str(fab), "--out", str(out)).returncode == 0
    state = ["--state-dir", str(tmp_path / "state")]
    r = syncmesh("run", str(fab), "l1", *state, env={"SYNCMESH_TOKEN": TOKEN})
    assert r.returncode == 2 and "TLS is on by default: give --certs DIR" in r.stderr
    r = syncmesh("run", str(fab), "l1", "--tls-ca", str(out / "ca.pem"),
                 "--tls-cert", str(out / "l2.pem"), "--tls-key", str(out / "l2.key"), *state)
    assert r.returncode == 2 and "names 'l2', not this daemon's switch 'l1'" in r.stderr
    r = syncmesh("run", str(fab), "l1", "--tls-ca", str(out / "ca.pem"),
                 "--tls-cert", str(out / "l1.pem"), "--tls-key", str(out / "l2.key"), *state)
    assert r.returncode == 2 and "does not belong to the certificate" in r.stderr
    other = tmp_path / "other"
    assert syncmesh("certs", "--fabric", str(fab), "--out", str(other)).returncode == 0
    r = syncmesh("run", str(fab), "l1", "--tls-ca", str(out / "ca.pem"),
                 "--tls-cert", str(other / "l1.pem"), "--tls-key", str(other / "l1.key"), *state)
    assert r.returncode == 2 and "not signed by the CA" in r.stderr
    r = syncmesh("run", str(fab), "l1", "--insecure", *state, env={"SYNCMESH_TOKEN": ""})
    assert r.returncode == 2 and "--insecure needs the shared token" in r.stderr
    r = syncmesh("run", str(fab), "l1", "--insecure", "--certs", str(out), *state,
                 env={"SYNCMESH_TOKEN": TOKEN})
    assert r.returncode == 2 and "either --insecure or TLS files" in r.stderr
    assert "Traceback" not in r.stderr


def test_check_and_generate(tmp_path):
    out = tmp_path / "f.yaml"
    r = syncmesh("generate", "--leaves", "4", "--spines", "2", "--nics-per-host", "2",
                 "-o", str(out))
    assert r.returncode == 0, r.stderr
    r = syncmesh("check", str(out))
    assert r.returncode == 0
    assert "4 leaves, 2 spines, 8 links (0 down), 2 hosts" in r.stdout


def test_bad_fabric_file_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nswitches:\n  - {name: l1, role: leaf, id: 1, subnet: 10.0.1.0/24,"
                   " colour: red}\nlinks: []\n")
    for args in (("check", str(bad)), ("run", str(bad), "l1")):
        r = syncmesh(*args, env={"SYNCMESH_TOKEN": TOKEN})
        assert r.returncode == 2
        assert f"{bad}:3: switches[0].colour: unknown key 'colour'" in r.stderr
        assert "Traceback" not in r.stderr
    r = syncmesh("check", str(tmp_path / "missing.yaml"))
    assert r.returncode == 2 and "cannot read" in r.stderr and "Traceback" not in r.stderr


def test_run_argument_errors(tmp_path):
    fab = tmp_path / "f.yaml"
    dump(loopback_fabric(2, 2, 1, 1), fab)
    r = syncmesh("run", str(fab), "l9", env={"SYNCMESH_TOKEN": TOKEN})
    assert r.returncode == 2 and "no switch 'l9' (switches: l1, l2, s1, s2)" in r.stderr
    r = syncmesh("run", str(fab), "l1", "--tls-ca", str(fab), env={"SYNCMESH_TOKEN": TOKEN})
    assert r.returncode != 0 and "needs --tls-ca, --tls-cert and --tls-key" in r.stderr
    r = syncmesh("run", str(fab), "l1", "--keepalive", "5", env={"SYNCMESH_TOKEN": TOKEN})
    assert r.returncode == 2 and "keepalive_interval < dead_interval" in r.stderr


def test_busy_ports_are_a_clear_error(tmp_path):
    fab = loopback_fabric(2, 2, 1, 1)
    path = tmp_path / "f.yaml"
    dump(fab, path)
    insecure = ["--insecure", "--state-dir", str(tmp_path / "state")]
    host, port = fab.switch("l1").syncmesh.split(":")
    with socket.socket() as busy:
        busy.bind((host, int(port)))
        busy.listen()
        r = syncmesh("run", str(path), "l1", *insecure, env={"SYNCMESH_TOKEN": TOKEN})
        assert r.returncode == 1, r.stderr
        assert f"cannot listen on {host}:{port}" in r.stderr and "Traceback" not in r.stderr
        r = syncmesh("run", str(path), "l2", "--metrics", f"{host}:{port}", *insecure,
                     env={"SYNCMESH_TOKEN": TOKEN})
        assert r.returncode == 1, r.stderr
        assert "cannot serve metrics" in r.stderr and "Traceback" not in r.stderr
    r = syncmesh("run", str(path), "l2", "--metrics", "nine", *insecure,
                 env={"SYNCMESH_TOKEN": TOKEN})
    assert r.returncode == 2 and "--metrics: expected host:port" in r.stderr


def test_insecure_daemons_work_and_warn(tmp_path, caplog):
    import asyncio as aio
    import logging

    fab = loopback_fabric(2, 1, 1, 1)

    async def scenario():
        ds = {s.name: make_daemon(fab, s.name, None) for s in fab.switches}
        for d in ds.values():
            await d.start()
        try:
            await async_wait_until(lambda: len(ds["s1"].core.peers.up()) == 2, "sessions")
            ds["l1"].port_status({2: False})
            await async_wait_until(lambda: not ds["l2"].core.link_view()["l1:2-s1:1"], "notice")
        finally:
            for d in ds.values():
                await d.stop()

    with caplog.at_level(logging.WARNING, logger="syncmesh"):
        aio.run(aio.wait_for(scenario(), 60))
    warned = [r for r in caplog.records if getattr(r, "event", "") == "insecure"]
    assert {r.switch for r in warned} == {"l1", "l2", "s1"}


def test_killed_and_paused_daemon_processes_converge(tmp_path):
    """l2 runs as a process: SIGKILLed while a link fails, restarted (newer incarnation,
    resync); then SIGSTOPped for three dead intervals (a partition) while the link comes
    back, and continued: it is found silent, rejoins and learns the recovery."""
    fab = loopback_fabric(2, 2, 1, 1)
    path = tmp_path / "fabric.yaml"
    dump(fab, path)
    certs = tmp_path / "certs"
    assert syncmesh("certs", "--fabric", str(path), "--out", str(certs)).returncode == 0
    (metrics_port,) = free_ports(1)
    link = "l1:2-s1:1"

    logs = []

    def start_l2():
        logs.append(tmp_path / f"l2-{len(logs)}.log")
        with open(logs[-1], "w") as err:  # a file, not a pipe: a chatty daemon never blocks
            return subprocess.Popen(
                CMD + ["run", str(path), "l2", "--metrics", f"127.0.0.1:{metrics_port}",
                       "--keepalive", "0.1", "--dead-interval", "0.6", "--certs", str(certs),
                       "--state-dir", str(tmp_path / "state")],
                stderr=err, text=True)

    async def metric(name, **labels):
        try:
            page = parse((await http_get(metrics_port))[1])
        except OSError:
            return None
        return page.get((name, frozenset({("switch", "l2"), *labels.items()})))

    async def scenario(procs):
        ds = {n: make_daemon(fab, n, certs) for n in ("l1", "s1", "s2")}
        for d in ds.values():
            await d.start()
        try:
            procs.append(start_l2())
            await async_wait_until(lambda: set(ds["s1"].core.peers.up()) == {"l1", "l2"},
                             "s1 sees the l2 process", timeout=30)
            first_inc = ds["s1"].core.peers.peers["l2"].incarnation
            procs[-1].send_signal(signal.SIGKILL)
            procs[-1].wait(10)
            ds["l1"].port_status({2: False})  # news the dead process misses
            await async_wait_until(lambda: "l2" not in ds["s1"].core.peers.up(), "s1 sees l2 gone")
            procs.append(start_l2())
            value = None
            for _ in range(600):
                value = await metric("syncmesh_link_up", link=link)
                if value == 0:
                    break
                await asyncio.sleep(0.05)
            assert value == 0, "restarted l2 never learned the failure"
            l2_now = ds["s1"].core.peers.peers["l2"]
            assert l2_now.incarnation > first_inc
            assert await metric("syncmesh_peers_up") == 2
            joins = l2_now.joins
            procs[-1].send_signal(signal.SIGSTOP)  # cut off without closing anything
            try:
                await async_wait_until(lambda: "l2" not in ds["s1"].core.peers.up(),
                                       "s1 finds the paused l2 silent")
                ds["l1"].port_status({2: True})  # news the paused process misses
                await asyncio.sleep(3 * 0.6)
            finally:
                procs[-1].send_signal(signal.SIGCONT)
            for _ in range(600):
                value = await metric("syncmesh_link_up", link=link)
                if value == 1:
                    break
                await asyncio.sleep(0.05)
            assert value == 1, "l2 never learned the recovery after the partition"
            await async_wait_until(lambda: set(ds["s1"].core.peers.up()) == {"l1", "l2"},
                                   "l2 rejoined s1")
            assert l2_now.joins == joins + 1 and l2_now.incarnation > first_inc
            assert await metric("syncmesh_stalls_total") >= 1  # it noticed it had not run
        finally:
            for d in ds.values():
                await d.stop()

    procs: list[subprocess.Popen] = []
    try:
        asyncio.run(asyncio.wait_for(scenario(procs), 90))
    finally:
        stop_processes(procs)
    # the second process stopped cleanly on SIGTERM; every line it logged names l2
    lines = [ln for ln in logs[-1].read_text().splitlines() if ln.strip()]
    assert procs[-1].returncode == 0
    assert any("event=started" in ln for ln in lines)
    assert any("event=stopped" in ln for ln in lines)
    assert all(" switch=l2 " in ln for ln in lines), lines
