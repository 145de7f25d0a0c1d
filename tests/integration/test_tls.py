"""TLS and MONGODB-X509 authentication, with certificates the tests make with the `openssl` command
(no key is committed): --tlsMode's four modes, client certificates required, optional, invalid,
the protocol versions, the server's startup refusals, and X.509 logins through pymongo, raw
`authenticate` commands and mongosh, compared with what MongoDB documents."""

import http.client
import json
import os
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request

import pymongo
import pytest
from pymongo.errors import OperationFailure, ServerSelectionTimeoutError

from clienttools import REPO, isolated_env, mongosh_path, require_node, require_node_modules
from conftest import ServerProcess, free_port

# The client certificate's subject, most specific first, as MongoDB names X.509 users.
CLIENT_SUBJECT = "CN=sensor-7,OU=ingest,O=Hourglass Clients,L=New York,ST=NY,C=US"
OTHER_SUBJECT = "CN=dashboard,OU=grafana,O=Hourglass Clients,C=US"
KEY_PASSWORD = "pem-secret"


def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _signed(cwd, name, subj, ext=None, password=None):
    """A key and a certificate for `subj` signed by the test CA; returns name.pem holding both."""
    key_args = ["-passout", f"pass:{password}"] if password else ["-noenc"]
    _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", *key_args,
             "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subj, cwd=cwd)
    sign = ["x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "2", "-out", f"{name}.crt"]
    if ext:
        with open(os.path.join(cwd, f"{name}.ext"), "w") as f:
            f.write(ext)
        sign += ["-extfile", f"{name}.ext"]
    _openssl(*sign, cwd=cwd)
    pem = os.path.join(cwd, f"{name}.pem")
    with open(pem, "w") as out:
        for part in (f"{name}.crt", f"{name}.key"):
            with open(os.path.join(cwd, part)) as f:
                out.write(f.read())
    return pem


class Certs:
    def __init__(self, d):
        d = str(d)
        _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                 "-noenc", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
                 "-subj", "/O=Hourglass Test/CN=Hourglass Test CA", cwd=d)
        self.ca = os.path.join(d, "ca.pem")
        san = "subjectAltName=DNS:localhost,IP:127.0.0.1\n"
        self.server = _signed(d, "server", "/O=Hourglass Servers/CN=localhost", san)
        self.server_encrypted = _signed(d, "server_enc", "/O=Hourglass Servers/CN=localhost",
                                        san, password=KEY_PASSWORD)
        self.client = _signed(d, "client",
                              "/C=US/ST=NY/L=New York/O=Hourglass Clients/OU=ingest/CN=sensor-7")
        self.other = _signed(d, "other", "/C=US/O=Hourglass Clients/OU=grafana/CN=dashboard")
        # A certificate no CA the server knows has signed.
        _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                 "-noenc", "-keyout", "rogue.key", "-out", "rogue.crt", "-days", "2",
                 "-subj", "/O=Elsewhere/CN=rogue", cwd=d)
        self.rogue = os.path.join(d, "rogue.pem")
        with open(self.rogue, "w") as out:
            for part in ("rogue.crt", "rogue.key"):
                with open(os.path.join(d, part)) as f:
                    out.write(f.read())


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return Certs(tmp_path_factory.mktemp("certs"))


class TlsServer(ServerProcess):
    """A server whose readiness check and default client speak TLS with a client certificate."""

    def __init__(self, dbpath, certs, extra_args=(), client_cert=True):
        super().__init__(dbpath, extra_args)
        self.certs = certs
        self.default_cert = certs.client if client_cert else None

    def client(self, **kwargs):
        opts = dict(tls=True, tlsCAFile=self.certs.ca)
        if self.default_cert:
            opts["tlsCertificateKeyFile"] = self.default_cert
        opts.update(kwargs)
        return super().client(**opts)


@pytest.fixture
def tls_servers(tmp_path, certs):
    started = []

    def new(*args, start=True, client_cert=True, ca=True, key=None):
        dbpath = tmp_path / f"db{len(started)}"
        dbpath.mkdir()
        base = ["--tlsCertificateKeyFile", key or certs.server]
        if ca:
            base += ["--tlsCAFile", certs.ca]
        s = TlsServer(str(dbpath), certs, base + list(args), client_cert=client_cert)
        started.append(s)
        if start:
            s.start()
        return s

    yield new
    for s in started:
        s.stop()


def plain_client(server, **kwargs):
    return pymongo.MongoClient("127.0.0.1", server.port, directConnection=True,
                               serverSelectionTimeoutMS=1500, **kwargs)


def cannot_connect(client):
    try:
        with pytest.raises((ServerSelectionTimeoutError, pymongo.errors.AutoReconnect)):
            client.admin.command("ping")
    finally:
        client.close()
    return True


def wait_listening(server):
    """Spawns a server whose readiness check could not connect, and waits for its port."""
    server.spawn()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert server.running(), server.log_tail()
        try:
            with socket.create_connection(("127.0.0.1", server.port), timeout=1):
                return server
        except OSError:
            time.sleep(0.05)
    raise AssertionError("the server never listened")


def log_entries(server):
    return [json.loads(line) for line in server.log_text().splitlines() if line.startswith("{")]


def exits_with(server, text):
    server.spawn()
    rc = server.wait_exit(30)
    assert rc not in (0, None), server.log_tail()
    assert text in server.log_text(), server.log_tail()
    return rc


def test_require_tls_serves_tls_clients_and_refuses_plain_ones(tls_servers, certs):
    s = tls_servers("--tlsMode", "requireTLS")
    c = s.client()
    assert c.admin.command("ping")["ok"] == 1
    status = c.admin.command("serverStatus")
    assert status["security"]["SSLServerSubjectName"] == "CN=localhost,O=Hourglass Servers"
    assert status["security"]["SSLServerHasCertificateAuthority"] is True
    assert status["security"]["SSLServerCertificateExpirationDate"].year >= 2026
    assert status["transportSecurity"]["1.3"] >= 1
    assert status["network"]["totalIngressTLSConnections"] >= 1
    c.test.readings.insert_many([{"i": i} for i in range(1000)])
    assert c.test.readings.count_documents({}) == 1000
    c.close()
    assert cannot_connect(plain_client(s))
    assert "The server is configured to only allow SSL connections" in s.log_text()
    assert '"id":22988' in s.log_text()


@pytest.mark.parametrize("mode", ["allowTLS", "preferTLS"])
def test_allow_and_prefer_tls_take_both_kinds_of_client(tls_servers, mode):
    s = tls_servers("--tlsMode", mode)
    t = s.client()
    p = plain_client(s)
    t.test.c.insert_one({"by": "tls"})
    p.test.c.insert_one({"by": "plain"})
    assert sorted(d["by"] for d in t.test.c.find()) == ["plain", "tls"]
    assert sorted(d["by"] for d in p.test.c.find()) == ["plain", "tls"]
    noted = "SSL mode is set to 'preferred' and connection to remote is not using SSL." in \
        s.log_text()
    assert noted == (mode == "preferTLS")
    t.close()
    p.close()


def test_tls_client_of_a_server_without_tls_is_turned_away(fresh_server, certs):
    s = fresh_server.new()
    c = pymongo.MongoClient("127.0.0.1", s.port, directConnection=True, tls=True,
                            tlsCAFile=certs.ca, serverSelectionTimeoutMS=1500)
    assert cannot_connect(c)
    assert "SSL handshake received but server is started without SSL support" in s.log_text()
    # The server is unharmed.
    assert s.client().admin.command("ping")["ok"] == 1


def test_client_certificate_required_unless_allowed_without(tls_servers):
    s = wait_listening(tls_servers("--tlsMode", "requireTLS", client_cert=False, start=False))
    c = s.client(serverSelectionTimeoutMS=1500)
    assert cannot_connect(c)
    assert "No SSL certificate provided by peer; connection rejected" in s.log_text()
    assert s.running()
    s.stop()
    s2 = tls_servers("--tlsMode", "requireTLS", "--tlsAllowConnectionsWithoutCertificates",
                     client_cert=False)
    c = s2.client()
    assert c.admin.command("ping")["ok"] == 1
    assert c.admin.command("connectionStatus")["authInfo"]["authenticatedUsers"] == []
    assert '"No SSL certificate provided by peer"' in s2.log_text()
    c.close()


def test_invalid_client_certificate_refused_or_let_in_naming_no_one(tls_servers, certs):
    s = wait_listening(tls_servers("--tlsMode", "requireTLS", start=False))
    c = s.client(tlsCertificateKeyFile=certs.rogue, serverSelectionTimeoutMS=1500)
    assert cannot_connect(c)
    assert "SSL peer certificate validation failed" in s.log_text()
    s.stop()

    s2 = tls_servers("--tlsMode", "requireTLS", "--tlsAllowInvalidCertificates")
    rogue = s2.client(tlsCertificateKeyFile=certs.rogue)
    assert rogue.admin.command("ping")["ok"] == 1
    warnings = rogue.admin.command("getLog", "startupWarnings")["log"]
    assert any("will not be considered permissible for authentication" in w for w in warnings)
    # An invalid certificate names no user: X.509 fails, and says only that it failed.
    with pytest.raises(OperationFailure) as e:
        rogue["$external"].command({"authenticate": 1, "mechanism": "MONGODB-X509"})
    assert e.value.code == 18 and e.value.details["errmsg"] == "Authentication failed."
    assert "No verified subject name available from client" in s2.log_text()
    rogue.close()


def test_disabled_protocols(tls_servers, certs):
    s = tls_servers("--tlsMode", "requireTLS", "--tlsDisabledProtocols", "TLS1_3")
    c = s.client()
    c.admin.command("ping")
    security = c.admin.command("serverStatus")["transportSecurity"]
    assert security["1.2"] >= 1 and security["1.3"] == 0
    opts = c.admin.command("getCmdLineOpts")["parsed"]["net"]["tls"]
    assert opts["disabledProtocols"] == "TLS1_3"
    c.close()
    # A client that speaks only TLS 1.3 finds no common version.
    ctx = ssl.create_default_context(cafile=certs.ca)
    ctx.load_cert_chain(certs.client)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    with socket.create_connection(("127.0.0.1", s.port), timeout=5) as raw:
        with pytest.raises(ssl.SSLError):
            ctx.wrap_socket(raw, server_hostname="localhost")
    # By default TLS 1.0 and 1.1 are off, 1.2 and 1.3 on.
    s2 = tls_servers("--tlsMode", "requireTLS")
    for version, name in [(ssl.TLSVersion.TLSv1_2, "TLSv1.2"), (ssl.TLSVersion.TLSv1_3, "TLSv1.3")]:
        ctx = ssl.create_default_context(cafile=certs.ca)
        ctx.load_cert_chain(certs.client)
        ctx.minimum_version = ctx.maximum_version = version
        with socket.create_connection(("127.0.0.1", s2.port), timeout=5) as raw:
            with ctx.wrap_socket(raw, server_hostname="localhost") as tls:
                assert tls.version() == name


def test_startup_refusals(tls_servers, certs, tmp_path):
    # A TLS mode needs a certificate.
    s = TlsServer(str(tmp_path), certs, ["--tlsMode", "requireTLS"])
    exits_with(s, "need tlsCertificateKeyFile or certificateSelector when TLS is enabled")
    # TLS options need a TLS mode.
    exits_with(tls_servers(start=False),
               "need to enable TLS via the sslMode/tlsMode flag when using TLS configuration")
    exits_with(tls_servers("--tlsMode", "sometimes", start=False),
               "unsupported value for tlsMode sometimes")
    exits_with(tls_servers("--tlsMode", "requireTLS", "--tlsDisabledProtocols", "SSL3",
                           start=False), "Unrecognized disabledProtocols 'SSL3'")
    # Something to check client certificates against.
    exits_with(tls_servers("--tlsMode", "requireTLS", ca=False, start=False),
               "The use of TLS without specifying a chain of trust is no longer supported")
    exits_with(tls_servers("--tlsMode", "requireTLS", "--setParameter", "tlsUseSystemCA=true",
                           start=False),
               "The use of both a CA File and the System Certificate store is not supported")
    # An encrypted key needs its password.
    rc = exits_with(tls_servers("--tlsMode", "requireTLS", key=certs.server_encrypted,
                                start=False), "Can not set up PEM key file.")
    assert rc == 1
    bad = tls_servers("--tlsMode", "requireTLS", "--tlsCertificateKeyFilePassword", "wrong",
                      key=certs.server_encrypted, start=False)
    exits_with(bad, '"Cannot read PEM key"')


def test_encrypted_key_system_ca_and_config_file(tls_servers, certs, tmp_path):
    s = tls_servers("--tlsMode", "requireTLS", "--tlsCertificateKeyFilePassword", KEY_PASSWORD,
                    key=certs.server_encrypted)
    c = s.client()
    parsed = c.admin.command("getCmdLineOpts")["parsed"]["net"]["tls"]
    assert parsed["mode"] == "requireTLS"
    assert parsed["certificateKeyFilePassword"] == "<password>"
    opts = c.admin.command("getCmdLineOpts")
    assert KEY_PASSWORD not in str(opts)
    assert opts["argv"][opts["argv"].index("--tlsCertificateKeyFilePassword") + 1] == "<password>"
    # Nor is it left in the command line other processes can read.
    with open(f"/proc/{s.proc.pid}/cmdline", "rb") as f:
        assert KEY_PASSWORD.encode() not in f.read()
    c.close()
    # tlsUseSystemCA instead of a CA file: the server starts; clients without a certificate are
    # let in as configured.
    s2 = tls_servers("--tlsMode", "requireTLS", "--setParameter", "tlsUseSystemCA=true",
                     "--tlsAllowConnectionsWithoutCertificates", ca=False, client_cert=False)
    assert s2.client().admin.command("ping")["ok"] == 1
    # net.tls in the YAML config file.
    conf = tmp_path / "tls.conf"
    conf.write_text(
        "net:\n  tls:\n    mode: requireTLS\n"
        f"    certificateKeyFile: {certs.server}\n    CAFile: {certs.ca}\n"
        "    allowConnectionsWithoutCertificates: true\n    disabledProtocols: TLS1_0,TLS1_1,TLS1_2\n")
    dbpath = tmp_path / "yaml"
    dbpath.mkdir()
    s3 = TlsServer(str(dbpath), certs, ["--config", str(conf)], client_cert=False)
    s3.start()
    try:
        c3 = s3.client()
        assert c3.admin.command("serverStatus")["transportSecurity"]["1.3"] >= 1
        assert cannot_connect(plain_client(s3))
        c3.close()
    finally:
        s3.stop()


@pytest.fixture
def x509_server(tls_servers):
    """--auth over requireTLS; the first user (root, by SCRAM) made through the localhost
    exception, then the X.509 user of the client certificate."""
    s = tls_servers("--tlsMode", "requireTLS", "--auth")
    anon = s.client()
    anon.admin.command("createUser", "boss", pwd="pw", roles=["root"])
    anon.close()
    root = s.client(username="boss", password="pw")
    root["$external"].command("createUser", CLIENT_SUBJECT,
                              roles=[{"role": "readWrite", "db": "plant"}])
    root.plant.readings.insert_one({"t": 1})
    yield s, root
    root.close()


def test_x509_login_with_pymongo(x509_server, certs):
    s, _ = x509_server
    c = s.client(authMechanism="MONGODB-X509")
    status = c.admin.command("connectionStatus")["authInfo"]
    assert status["authenticatedUsers"] == [{"user": CLIENT_SUBJECT, "db": "$external"}]
    assert status["authenticatedUserRoles"] == [{"role": "readWrite", "db": "plant"}]
    c.plant.readings.insert_one({"t": 2})
    assert c.plant.readings.count_documents({}) == 2
    with pytest.raises(OperationFailure) as e:
        c.other.readings.find_one()
    assert e.value.code == 13
    c.close()
    # pymongo authenticates inside hello (speculativeAuthenticate, no db given: $external).
    logins = [e["attr"] for e in log_entries(s) if e["id"] == 20250]
    assert {"mechanism": "MONGODB-X509", "speculative": True, "principalName": CLIENT_SUBJECT,
            "authenticationDatabase": "$external"}.items() <= logins[-1].items()


def test_x509_authenticate_command_errors(x509_server, certs):
    s, root = x509_server
    c = s.client()  # TLS with the client certificate, not authenticated
    ext = c["$external"]
    with pytest.raises(OperationFailure) as e:
        ext.command({"authenticate": 1, "mechanism": "MONGODB-X509", "user": OTHER_SUBJECT})
    assert (e.value.code, e.value.details["errmsg"]) == (18, "Authentication failed.")
    assert "There is no x.509 client certificate matching the user." in s.log_text()
    with pytest.raises(OperationFailure) as e:
        c.plant.command({"authenticate": 1, "mechanism": "MONGODB-X509"})
    assert e.value.code == 17
    assert e.value.details["errmsg"] == \
        "X.509 authentication must always use the $external database."
    with pytest.raises(OperationFailure) as e:
        ext.command({"authenticate": 1, "mechanism": "MONGODB-X509", "extra": 1})
    assert e.value.code == 40415
    reply = ext.command({"authenticate": 1, "mechanism": "MONGODB-X509", "user": CLIENT_SUBJECT})
    assert reply["dbname"] == "$external" and reply["user"] == CLIENT_SUBJECT
    assert c.plant.readings.count_documents({}) == 1
    c.close()
    # A certificate whose subject is no user: UserNotFound, as mongod answers.
    other = s.client(tlsCertificateKeyFile=certs.other)
    with pytest.raises(OperationFailure) as e:
        other["$external"].command({"authenticate": 1, "mechanism": "MONGODB-X509"})
    assert e.value.code == 11
    assert e.value.details["errmsg"] == \
        f'Could not find user "{OTHER_SUBJECT}" for db "$external"'
    other.close()


def test_external_users(x509_server):
    _, root = x509_server
    ext = root["$external"]
    with pytest.raises(OperationFailure) as e:
        ext.command("createUser", OTHER_SUBJECT, pwd="x", roles=[])
    assert e.value.code == 2
    assert "Cannot set the password for users defined on the '$external' database" in str(e.value)
    with pytest.raises(OperationFailure) as e:
        ext.command("createUser", OTHER_SUBJECT, roles=[], mechanisms=["SCRAM-SHA-256"])
    assert e.value.code == 2 and "mechanisms" in str(e.value)
    info = ext.command("usersInfo", CLIENT_SUBJECT, showCredentials=True)["users"][0]
    assert info["mechanisms"] == ["external"]
    assert info["credentials"] == {"external": True}
    assert info["db"] == "$external" and info["user"] == CLIENT_SUBJECT
    stored = root.admin["system.users"].find_one({"_id": "$external." + CLIENT_SUBJECT})
    assert stored["credentials"] == {"external": True}
    # Dropping the user ends what its connections may do at their next command.
    c = x509_server[0].client(authMechanism="MONGODB-X509")
    assert c.plant.readings.count_documents({}) == 1
    ext.command("dropUser", CLIENT_SUBJECT)
    with pytest.raises(OperationFailure) as e:
        c.plant.readings.count_documents({})
    assert e.value.code == 13
    c.close()


def test_mongosh_over_tls_with_x509(x509_server, certs, tmp_path):
    s, _ = x509_server
    out = subprocess.run(
        [mongosh_path(), f"mongodb://localhost:{s.port}/plant", "--quiet", "--tls",
         "--tlsCAFile", certs.ca, "--tlsCertificateKeyFile", certs.client,
         "--authenticationMechanism", "MONGODB-X509", "--authenticationDatabase", "$external",
         "--eval",
         "db.readings.insertOne({t: 3}); "
         "print(JSON.stringify(db.runCommand({connectionStatus: 1}).authInfo.authenticatedUsers));"
         "print(db.readings.countDocuments({}))"],
        capture_output=True, text=True, timeout=120, env=isolated_env(tmp_path), cwd=REPO)
    assert out.returncode == 0, out.stderr + out.stdout
    lines = out.stdout.strip().splitlines()
    assert lines[-2] == '[{"user":"%s","db":"$external"}]' % CLIENT_SUBJECT
    assert lines[-1] == "2"


def test_node_driver_logs_in_over_tls(x509_server, certs, tmp_path):
    s, _ = x509_server
    require_node_modules()
    env = isolated_env(tmp_path)
    env.update(HG_PORT=str(s.port), HG_CA=certs.ca, HG_CLIENT_PEM=certs.client,
               HG_X509_USER=CLIENT_SUBJECT, HG_SCRAM_USER="boss", HG_SCRAM_PWD="pw")
    p = subprocess.run(
        [require_node(), "--test", "--test-reporter=spec",
         os.path.join(REPO, "tests", "node", "security_check.mjs")],
        capture_output=True, text=True, timeout=300, env=env, cwd=REPO)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "pass 4" in p.stdout and "fail 0" in p.stdout, p.stdout


def https_get(port, path, ca, method="GET", body=None):
    ctx = ssl.create_default_context(cafile=ca)
    req = urllib.request.Request(f"https://localhost:{port}{path}", data=body, method=method)
    try:
        with urllib.request.urlopen(req, timeout=30, context=ctx) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


@pytest.mark.parametrize("mode,key", [("requireTLS", "plain"), ("preferTLS", "encrypted")])
def test_the_http_port_speaks_https_where_tls_is_preferred_or_required(tls_servers, certs, mode,
                                                                         key):
    port = free_port()
    extra = ["--tlsCertificateKeyFilePassword", KEY_PASSWORD] if key == "encrypted" else []
    s = tls_servers("--tlsMode", mode, "--httpPort", str(port), *extra,
                    key=certs.server_encrypted if key == "encrypted" else certs.server)
    assert https_get(port, "/ping", certs.ca)[0] == 204
    status, body = https_get(port, "/write?db=tlshttp", certs.ca, "POST", b"m,t=a v=1 1")
    assert (status, body) == (204, "")
    c = s.client()
    assert c.tlshttp.m.count_documents({}) == 1
    c.close()
    # Plain HTTP gets no answer from the HTTPS port.
    with pytest.raises((urllib.error.URLError, ConnectionError, http.client.HTTPException)):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/ping", timeout=10)


def test_allow_tls_keeps_plain_http(tls_servers, certs):
    port = free_port()
    tls_servers("--tlsMode", "allowTLS", "--httpPort", str(port))
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/ping", timeout=10) as r:
        assert r.status == 204
