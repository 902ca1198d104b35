"""`softswitch check` and the subcommand table, run as a real process."""

import subprocess
import sys
from pathlib import Path

from softswitch import cli

ROUTER = Path(__file__).parent / "programs" / "basic_router.p4"


def run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "softswitch.cli", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=120)


def test_check_clean_program_exits_0():
    r = run("check", str(ROUTER))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().endswith("ok (1 tables, 3 actions, 0 warning(s))")
    assert r.stderr == ""


def test_check_errors_exit_1_with_located_messages(tmp_path):
    bad = tmp_path / "bad.p4"
    bad.write_text(ROUTER.read_text().replace("hdr.ipv4.ttl = hdr.ipv4.ttl - 1;",
                                              "hdr.ipv4.ttl = hdr.ipv4.totalLen;"))
    r = run("check", "bad.p4", cwd=tmp_path)
    assert r.returncode == 1
    lines = r.stderr.splitlines()
    assert lines[0] == ("bad.p4:87:24: error: expected bit<8>, got bit<16> "
                        "(P4 does not change widths implicitly; cast it)")
    assert lines[1].strip() == "hdr.ipv4.ttl = hdr.ipv4.totalLen;"
    assert lines[2] == " " * 23 + "^"
    assert lines[-1] == "1 error(s)"
    assert "Traceback" not in r.stderr


def test_check_defines_and_include_dirs(tmp_path):
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "w.p4").write_text("#define WIDTH 8\n")
    prog = tmp_path / "p.p4"
    prog.write_text('#include <w.p4>\n' + ROUTER.read_text().replace(
        "bit<1> routed;", "bit<WIDTH> routed; bit<EXTRA> more;"))
    r = run("check", str(prog), "-I", str(tmp_path / "inc"), "-D", "EXTRA=4")
    assert r.returncode == 0, r.stderr
    r = run("check", str(prog), "-I", str(tmp_path / "inc"))
    assert r.returncode == 1 and "EXTRA" in r.stderr


def test_dump_ast_and_ir():
    ast = run("check", str(ROUTER), "--dump-ast")
    ir = run("check", str(ROUTER), "--dump-ir")
    assert ast.returncode == 0 and ir.returncode == 0
    assert "TableDecl name='ipv4_lpm'" in ast.stdout
    assert "StructDecl name='standard_metadata_t'" not in ast.stdout  # includes left out
    assert "fqname=MyIngress.ipv4_lpm" in ir.stdout
    assert "PathExpr name='hdr' : headers -> Param hdr" in ir.stdout
    assert "[isValid]" in ir.stdout and ": bit<8>" not in ast.stdout


def test_missing_file_and_unknown_command():
    r = run("check", "no_such_file.p4")
    assert r.returncode == 1 and r.stderr.startswith("no_such_file.p4:1:1: error: cannot read file")
    r = run("frobnicate")
    assert r.returncode == 2 and "unknown command 'frobnicate'" in r.stderr
    r = run()
    assert r.returncode == 2 and "check" in r.stdout and "stf" in r.stdout


def test_commands_table_is_extensible(monkeypatch, capsys):
    monkeypatch.setitem(cli.COMMANDS, "echo-args", ("tests.softswitch.cli_helper:echo", "x"))
    calls = []
    import types
    mod = types.ModuleType("tests.softswitch.cli_helper")
    mod.echo = lambda argv: calls.append(list(argv)) or 7
    monkeypatch.setitem(sys.modules, "tests.softswitch.cli_helper", mod)
    assert cli.main(["echo-args", "a", "b"]) == 7
    assert calls == [["a", "b"]]


def test_stf_subcommand_delegates(tmp_path):
    stf = tmp_path / "t.stf"
    stf.write_text("# no packets\n")
    r = run("stf", str(ROUTER), str(stf))
    assert r.returncode == 0, r.stdout + r.stderr


def test_check_reports_what_the_engine_cannot_execute(tmp_path):
    src = ROUTER.read_text().replace(
        "const bit<16> TYPE_IPV4 = 0x0800;",
        "const bit<16> TYPE_IPV4 = 0x0800;\nextern Gadget { Gadget(); void poke(); }").replace(
        "    action drop() {", "    Gadget() g;\n    action drop() {\n        g.poke();")
    (tmp_path / "ext.p4").write_text(src)
    r = run("check", "ext.p4", cwd=tmp_path)
    assert r.returncode == 1
    lines = r.stderr.splitlines()
    assert lines[0] == ("ext.p4:82:9: error: unsupported: extern method Gadget.poke (softswitch "
                        "runs the externs of core.p4 and v1model.p4)")
    assert lines[1] == "        g.poke();" and lines[2] == " " * 8 + "^"
    r = run("check", "ext.p4", "--front-end-only", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
