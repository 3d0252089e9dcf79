"""Risk scoring: per-language rule tables that map calls and imports to risk categories.

Owns the tables, the complexity thresholds and the level decision. It sees only call
names, receivers and import aliases (plain strings), never trees or files.
The rules are documented, language by language, in docs/risk.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from engine.semantic.model import CallSite, ImportRef, Risk

NETWORK = "network"
FILESYSTEM = "filesystem-write"
SUBPROCESS = "subprocess"
# Importing a module named at run time (``importlib.import_module(name)``): it runs that module's
# top-level code, but it starts no program and evaluates no string; plugin loading is its usual use.
DYNAMIC_IMPORT = "dynamic-import"
DATABASE = "database"
CRYPTO = "crypto-auth-secrets"
GLOBAL_STATE = "global-state"
COMPLEXITY = "complexity"

# A category this dangerous makes a symbol high risk on its own: it runs arbitrary code.
ALWAYS_HIGH = frozenset({SUBPROCESS})
# Branch counts: ~10 is where a function stops fitting in one reader's head (McCabe's own
# threshold); ~20 is where review reliably misses paths.
MODERATE_BRANCHES = 10
HIGH_BRANCHES = 20
# Nesting depth: 4 levels is already hard to follow, 6 is a refactoring target.
MODERATE_NESTING = 4
HIGH_NESTING = 6
# Two different kinds of side effect in one symbol make it high risk.
HIGH_CATEGORY_COUNT = 2
# Reasons listed per symbol; more would only repeat the same story.
MAX_REASONS = 6


@dataclass(frozen=True)
class RiskRules:
    """One language's table. Keys are dotted call names after alias resolution."""

    exact: Mapping[str, str] = field(default_factory=dict)
    # Any call whose dotted name starts with ``prefix.`` (a module or namespace).
    prefixes: Mapping[str, str] = field(default_factory=dict)
    # A method of this name on any receiver (``cursor.execute``).
    methods: Mapping[str, str] = field(default_factory=dict)
    # A prefix counts only when the file imports its root: in JavaScript a module is used through
    # the name it was imported as, and ``request``, ``net`` or ``got`` are as often local variables
    # (got's own ``request.end()`` on an http.ClientRequest is no call into the npm ``request``).
    prefixes_need_import: bool = False
    # Dotted names (and their members) under a matching prefix that do no I/O: a URL parser or an
    # exception class of an HTTP client is no talking to another machine (requests 9a8a826f:
    # ``urllib3.util.parse_url`` was "new network use").
    no_effect: frozenset[str] = frozenset()
    # Derived: call names and receiver roots that can match at all (a fast reject for most calls).
    names: frozenset[str] = field(init=False, default=frozenset())
    roots: frozenset[str] = field(init=False, default=frozenset())

    def __post_init__(self) -> None:
        names = {key.rsplit(".", 1)[-1] for key in self.exact} | set(self.methods)
        roots = {key.split(".", 1)[0] for key in self.prefixes} | {key.split(".", 1)[0] for key in self.exact}
        object.__setattr__(self, "names", frozenset(names))
        object.__setattr__(self, "roots", frozenset(roots))


def _table(**groups: Iterable[str]) -> dict[str, str]:
    names = {
        "network": NETWORK,
        "fs": FILESYSTEM,
        "proc": SUBPROCESS,
        "dynimport": DYNAMIC_IMPORT,
        "db": DATABASE,
        "crypto": CRYPTO,
        "state": GLOBAL_STATE,
    }
    out: dict[str, str] = {}
    for key, values in groups.items():
        for value in values:
            out[value] = names[key]
    return out


PYTHON_RULES = RiskRules(
    exact=_table(
        proc=(
            "eval",
            "exec",
            "compile",
            "os.system",
            "os.popen",
            "os.execv",
            "os.execve",
            "os.execvp",
            "os.spawnv",
            "os.fork",
            "pickle.loads",
            "pickle.load",
            "marshal.loads",
        ),
        dynimport=("__import__", "importlib.import_module"),
        fs=(
            "os.remove",
            "os.unlink",
            "os.rename",
            "os.replace",
            "os.makedirs",
            "os.mkdir",
            "os.rmdir",
            "os.removedirs",
            "os.chmod",
            "os.chown",
            "os.symlink",
            "os.truncate",
            "shutil.rmtree",
            "shutil.copy",
            "shutil.copy2",
            "shutil.copyfile",
            "shutil.copytree",
            "shutil.move",
            "tempfile.mkstemp",
            "tempfile.mkdtemp",
        ),
        network=("socket.socket", "socket.create_connection", "smtplib.SMTP", "ftplib.FTP"),
        db=("sqlite3.connect",),
        crypto=(
            "os.urandom",
            "secrets.token_hex",
            "secrets.token_bytes",
            "secrets.token_urlsafe",
            "getpass.getpass",
            "os.getenv",
            "os.environ.get",
        ),
        state=(
            "os.putenv",
            "os.environ.setdefault",
            "os.environ.update",
            "os.environ.pop",
            "os.chdir",
            "sys.setrecursionlimit",
            "sys.path.append",
            "sys.path.insert",
            "setattr",
            "delattr",
        ),
    ),
    prefixes=_table(
        proc=("subprocess", "asyncio.create_subprocess_exec", "asyncio.create_subprocess_shell", "pty"),
        network=(
            "requests",
            "httpx",
            "urllib.request",
            "urllib3",
            "aiohttp",
            "http.client",
            "socket",
            "websocket",
            "websockets",
            "grpc",
            "boto3",
            "paramiko",
        ),
        db=(
            "sqlite3",
            "psycopg",
            "psycopg2",
            "pymysql",
            "MySQLdb",
            "sqlalchemy",
            "pymongo",
            "redis",
            "django.db.connection",
        ),
        crypto=("hashlib", "hmac", "secrets", "jwt", "cryptography", "ssl", "bcrypt", "Crypto", "keyring"),
        fs=("shutil",),
    ),
    # Parsers, data structures and exceptions of the HTTP clients above: no request is sent.
    no_effect=frozenset(
        {
            "urllib3.util.parse_url",
            "urllib3.util.url",
            "urllib3.util.Url",
            "urllib3.util.Retry",
            "urllib3.util.Timeout",
            "urllib3.util.retry",
            "urllib3.util.timeout",
            "urllib3.exceptions",
            "urllib3.fields",
            "urllib3.filepost",
            "urllib3._collections",
            "requests.exceptions",
            "requests.structures",
            "requests.status_codes",
            "requests.codes",
            "httpx.URL",
            "httpx.Headers",
            "httpx.QueryParams",
            "httpx.Timeout",
            "aiohttp.hdrs",
            "socket.inet_aton",
            "socket.inet_pton",
            "socket.inet_ntoa",
            "socket.inet_ntop",
        }
    ),
    methods=_table(
        db=("execute", "executemany", "executescript", "raw", "cursor", "commit", "rollback"),
        fs=(
            "write_text",
            "write_bytes",
            "unlink",
            "rmtree",
            "mkdir",
            "touch",
            "rename",
            "chmod",
            "symlink_to",
            "hardlink_to",
            "rmdir",
        ),
        network=("urlopen", "sendall", "recv"),
        crypto=("set_password", "check_password", "make_password", "encrypt", "decrypt", "sign", "verify"),
    ),
)

JS_RULES = RiskRules(
    exact=_table(
        proc=(
            "eval",
            "Function",
            "vm.runInContext",
            "vm.runInNewContext",
            "vm.runInThisContext",
            "require.resolve",
        ),
        network=(
            "fetch",
            "XMLHttpRequest",
            "WebSocket",
            "http.request",
            "http.get",
            "https.request",
            "https.get",
            "net.connect",
            "net.createConnection",
            "net.createServer",
            "http.createServer",
            "https.createServer",
        ),
        fs=(
            "fs.writeFile",
            "fs.writeFileSync",
            "fs.appendFile",
            "fs.appendFileSync",
            "fs.unlink",
            "fs.unlinkSync",
            "fs.rm",
            "fs.rmSync",
            "fs.rmdir",
            "fs.rmdirSync",
            "fs.mkdir",
            "fs.mkdirSync",
            "fs.rename",
            "fs.renameSync",
            "fs.createWriteStream",
            "fs.copyFile",
            "fs.copyFileSync",
            "fs.promises.writeFile",
            "fs.chmod",
            "fs.chmodSync",
        ),
        crypto=(
            "crypto.createHash",
            "crypto.createHmac",
            "crypto.randomBytes",
            "crypto.createCipheriv",
            "crypto.createDecipheriv",
            "crypto.pbkdf2",
            "crypto.scrypt",
            "jwt.sign",
            "jwt.verify",
            "bcrypt.hash",
            "bcrypt.compare",
        ),
        state=("Object.defineProperty", "Object.setPrototypeOf", "Object.assign"),
    ),
    prefixes=_table(
        proc=("child_process", "execa", "shelljs"),
        network=("axios", "got", "superagent", "node-fetch", "request", "undici", "net", "dgram", "tls"),
        db=(
            "mysql",
            "mysql2",
            "pg",
            "mongoose",
            "mongodb",
            "sequelize",
            "knex",
            "redis",
            "ioredis",
            "prisma",
            "sqlite3",
            "better-sqlite3",
        ),
        crypto=("crypto", "bcrypt", "jsonwebtoken", "jose"),
    ),
    methods=_table(
        # Not ``exec`` on any receiver: that is mostly ``RegExp.prototype.exec``
        # (``/(\w+):/.exec(s)``); child_process's ``exec`` is matched through its import.
        proc=("execSync", "spawn", "spawnSync", "execFile", "execFileSync", "fork"),
        db=(
            "query",
            "findOne",
            "insertOne",
            "insertMany",
            "updateOne",
            "deleteOne",
            "deleteMany",
            "aggregate",
        ),
        fs=("writeFile", "writeFileSync", "appendFileSync", "unlinkSync", "rmSync", "mkdirSync"),
        network=("sendBeacon",),
    ),
    prefixes_need_import=True,
)

GO_RULES = RiskRules(
    exact=_table(
        proc=("exec.Command", "exec.CommandContext", "syscall.Exec", "os.StartProcess", "plugin.Open"),
        fs=(
            "os.WriteFile",
            "os.Create",
            "os.Remove",
            "os.RemoveAll",
            "os.Mkdir",
            "os.MkdirAll",
            "os.Rename",
            "os.Chmod",
            "os.OpenFile",
            "ioutil.WriteFile",
            "os.Symlink",
            "os.Truncate",
        ),
        state=("os.Setenv", "os.Unsetenv", "os.Chdir"),
        crypto=("os.Getenv", "os.LookupEnv"),
        db=("sql.Open",),
    ),
    prefixes=_table(
        network=("http", "net", "grpc", "websocket", "rpc", "smtp"),
        db=("sql", "gorm", "mongo", "redis", "pgx", "sqlx"),
        crypto=("crypto", "sha256", "sha1", "md5", "hmac", "aes", "rsa", "bcrypt", "jwt", "tls", "rand"),
        proc=("exec",),
    ),
    methods=_table(
        db=("Exec", "Query", "QueryRow", "QueryContext", "ExecContext", "Begin", "Commit"),
        network=("Dial", "ListenAndServe", "Do"),
    ),
)

RUST_RULES = RiskRules(
    exact=_table(
        proc=("Command.new", "process.Command.new", "std.process.Command.new"),
        fs=(
            "fs.write",
            "fs.remove_file",
            "fs.remove_dir_all",
            "fs.create_dir_all",
            "fs.create_dir",
            "fs.rename",
            "fs.copy",
            "File.create",
            "fs.File.create",
            "OpenOptions.new",
        ),
        state=("env.set_var", "env.remove_var", "env.set_current_dir"),
        crypto=("env.var", "env.var_os"),
        network=("TcpStream.connect", "TcpListener.bind", "UdpSocket.bind"),
    ),
    prefixes=_table(
        network=("reqwest", "hyper", "ureq", "surf", "tokio.net", "std.net"),
        db=("sqlx", "diesel", "rusqlite", "postgres", "redis", "mongodb", "sea_orm"),
        crypto=(
            "ring",
            "sha2",
            "hmac",
            "aes",
            "rsa",
            "bcrypt",
            "argon2",
            "jsonwebtoken",
            "rustls",
            "openssl",
        ),
        proc=("std.process",),
    ),
    methods=_table(db=("execute", "query", "query_as", "fetch_one", "fetch_all"), fs=("write_all",)),
)

JAVA_RULES = RiskRules(
    exact=_table(
        proc=("Runtime.getRuntime", "ProcessBuilder", "Class.forName", "ScriptEngineManager"),
        fs=(
            "Files.write",
            "Files.writeString",
            "Files.delete",
            "Files.deleteIfExists",
            "Files.createFile",
            "Files.createDirectories",
            "Files.move",
            "Files.copy",
            "FileOutputStream",
            "FileWriter",
            "RandomAccessFile",
            "PrintWriter",
        ),
        network=(
            "URL",
            "Socket",
            "ServerSocket",
            "HttpClient.newHttpClient",
            "HttpURLConnection",
            "RestTemplate",
            "WebClient.create",
            "OkHttpClient",
        ),
        db=("DriverManager.getConnection",),
        crypto=(
            "MessageDigest.getInstance",
            "Cipher.getInstance",
            "KeyGenerator.getInstance",
            "SecureRandom",
            "Mac.getInstance",
            "System.getenv",
            "KeyStore.getInstance",
        ),
        state=("System.setProperty", "System.exit", "System.setOut", "System.setErr"),
    ),
    prefixes=_table(network=("HttpClient", "OkHttp"), db=("JdbcTemplate", "EntityManager")),
    methods=_table(
        proc=("exec",),
        db=(
            "executeQuery",
            "executeUpdate",
            "prepareStatement",
            "createQuery",
            "createNativeQuery",
            "persist",
            "merge",
        ),
        fs=("delete", "createNewFile", "mkdirs", "renameTo"),
        network=("openConnection", "openStream"),
        crypto=("doFinal", "digest"),
    ),
)

KOTLIN_RULES = RiskRules(
    exact={**JAVA_RULES.exact, **_table(fs=("File.writeText", "File.writeBytes", "File.appendText"))},
    prefixes=JAVA_RULES.prefixes,
    methods={
        **JAVA_RULES.methods,
        **_table(fs=("writeText", "writeBytes", "appendText", "deleteRecursively")),
    },
)

CSHARP_RULES = RiskRules(
    exact=_table(
        proc=("Process.Start", "Assembly.Load", "Assembly.LoadFrom", "Activator.CreateInstance"),
        fs=(
            "File.WriteAllText",
            "File.WriteAllBytes",
            "File.WriteAllLines",
            "File.AppendAllText",
            "File.Delete",
            "File.Move",
            "File.Copy",
            "File.Create",
            "Directory.CreateDirectory",
            "Directory.Delete",
            "FileStream",
            "StreamWriter",
        ),
        network=("HttpClient", "WebClient", "TcpClient", "Socket", "WebRequest.Create"),
        db=("SqlConnection", "SqlCommand", "NpgsqlConnection", "SqliteConnection"),
        crypto=(
            "SHA256.Create",
            "MD5.Create",
            "Aes.Create",
            "RSA.Create",
            "HMACSHA256",
            "RandomNumberGenerator.GetBytes",
            "Environment.GetEnvironmentVariable",
        ),
        state=("Environment.SetEnvironmentVariable", "Environment.Exit"),
    ),
    methods=_table(
        network=("GetAsync", "PostAsync", "PutAsync", "DeleteAsync", "SendAsync", "GetStringAsync"),
        db=(
            "ExecuteNonQuery",
            "ExecuteReader",
            "ExecuteScalar",
            "SaveChanges",
            "SaveChangesAsync",
            "FromSqlRaw",
            "ExecuteSqlRaw",
        ),
        crypto=("ComputeHash", "Encrypt", "Decrypt"),
    ),
)

C_RULES = RiskRules(
    exact=_table(
        proc=(
            "system",
            "popen",
            "execl",
            "execlp",
            "execle",
            "execv",
            "execvp",
            "execve",
            "fork",
            "vfork",
            "posix_spawn",
            "dlopen",
            "std.system",
        ),
        fs=(
            "fopen",
            "fwrite",
            "fputs",
            "fprintf",
            "remove",
            "unlink",
            "rename",
            "mkdir",
            "rmdir",
            "chmod",
            "truncate",
            "creat",
            "open",
            "write",
            "std.ofstream",
            "std.filesystem.remove",
            "std.filesystem.remove_all",
            "std.filesystem.create_directories",
        ),
        network=(
            "socket",
            "connect",
            "bind",
            "listen",
            "accept",
            "send",
            "recv",
            "sendto",
            "recvfrom",
            "getaddrinfo",
            "curl_easy_perform",
            "curl_easy_init",
        ),
        db=("sqlite3_open", "sqlite3_exec", "sqlite3_prepare_v2", "mysql_query", "PQexec", "PQconnectdb"),
        crypto=(
            "getenv",
            "secure_getenv",
            "RAND_bytes",
            "EVP_EncryptInit_ex",
            "EVP_DigestInit_ex",
            "SHA256",
            "MD5",
            "crypt",
            "getrandom",
        ),
        state=("setenv", "putenv", "unsetenv", "chdir", "signal", "atexit", "setlocale"),
    ),
    prefixes=_table(network=("boost.asio",), db=("sqlite3",)),
)

RUBY_RULES = RiskRules(
    exact=_table(
        proc=(
            "eval",
            "instance_eval",
            "class_eval",
            "module_eval",
            "system",
            "exec",
            "spawn",
            "Kernel.system",
            "Kernel.exec",
            "Open3.capture2",
            "Open3.capture3",
            "Open3.popen3",
            "IO.popen",
            "send",
            "public_send",
            "constantize",
        ),
        fs=(
            "File.write",
            "File.delete",
            "File.unlink",
            "File.rename",
            "FileUtils.rm",
            "FileUtils.rm_rf",
            "FileUtils.mkdir_p",
            "FileUtils.mv",
            "FileUtils.cp",
            "Dir.mkdir",
            "File.open",
            "IO.write",
        ),
        network=(
            "Net.HTTP.get",
            "Net.HTTP.post",
            "Net.HTTP.start",
            "Net.HTTP.new",
            "URI.open",
            "TCPSocket.new",
            "HTTParty.get",
            "HTTParty.post",
            "Faraday.new",
            "RestClient.get",
            "RestClient.post",
        ),
        crypto=(
            "Digest.SHA256.hexdigest",
            "OpenSSL.HMAC.hexdigest",
            "SecureRandom.hex",
            "BCrypt.Password.create",
            "JWT.encode",
            "JWT.decode",
        ),
    ),
    prefixes=_table(
        network=("Net.HTTP", "HTTParty", "Faraday", "RestClient"),
        crypto=("OpenSSL", "Digest", "BCrypt", "JWT", "SecureRandom"),
        db=("ActiveRecord", "PG"),
    ),
    methods=_table(
        db=("find_by_sql", "execute", "exec_query", "update_all", "delete_all", "destroy_all"),
        proc=("instance_variable_set", "define_method"),
    ),
)

PHP_RULES = RiskRules(
    exact=_table(
        proc=(
            "eval",
            "exec",
            "shell_exec",
            "system",
            "passthru",
            "proc_open",
            "popen",
            "pcntl_exec",
            "assert",
            "create_function",
            "unserialize",
            "call_user_func",
            "call_user_func_array",
        ),
        fs=(
            "file_put_contents",
            "fwrite",
            "fputs",
            "unlink",
            "rename",
            "mkdir",
            "rmdir",
            "chmod",
            "copy",
            "move_uploaded_file",
            "fopen",
            "tempnam",
        ),
        network=("curl_exec", "curl_init", "fsockopen", "file_get_contents", "stream_socket_client", "mail"),
        db=("mysqli_query", "mysql_query", "pg_query", "mysqli_connect", "PDO"),
        crypto=(
            "password_hash",
            "password_verify",
            "hash",
            "hash_hmac",
            "openssl_encrypt",
            "openssl_decrypt",
            "random_bytes",
            "md5",
            "sha1",
            "crypt",
            "getenv",
        ),
        state=("putenv", "ini_set", "set_error_handler", "define", "session_start", "setcookie", "header"),
    ),
    methods=_table(db=("query", "exec", "prepare", "execute"), network=("request", "send")),
)

SWIFT_RULES = RiskRules(
    exact=_table(
        proc=("Process", "NSTask", "dlopen", "system"),
        network=("URLSession.shared.dataTask", "URLSession", "URLRequest", "NWConnection"),
        fs=(
            "FileManager.default.removeItem",
            "FileManager.default.createFile",
            "FileManager.default.createDirectory",
            "FileManager.default.moveItem",
            "FileManager.default.copyItem",
        ),
        crypto=("SHA256.hash", "HMAC", "SecItemAdd", "SecItemCopyMatching", "SecRandomCopyBytes"),
        state=("setenv", "UserDefaults.standard.set"),
    ),
    methods=_table(
        network=("dataTask", "downloadTask", "uploadTask", "data"),
        fs=("write", "removeItem", "createDirectory", "moveItem"),
        db=("executeFetchRequest", "save", "fetch"),
    ),
)

BASH_RULES = RiskRules(
    exact=_table(
        proc=("eval", "exec", "source", ".", "bash", "sh", "sudo", "xargs", "nohup"),
        network=("curl", "wget", "ssh", "scp", "rsync", "nc", "netcat", "ftp", "sftp", "telnet"),
        fs=(
            "rm",
            "mv",
            "cp",
            "mkdir",
            "rmdir",
            "chmod",
            "chown",
            "ln",
            "dd",
            "truncate",
            "tee",
            "touch",
            "install",
        ),
        db=("psql", "mysql", "sqlite3", "redis-cli", "mongo", "mongosh"),
        crypto=("openssl", "gpg", "ssh-keygen", "sha256sum", "md5sum", "base64"),
        state=("export", "unset", "set", "cd", "ulimit", "umask", "trap"),
    ),
)

RULES_BY_LANGUAGE: dict[str, RiskRules] = {
    "python": PYTHON_RULES,
    "javascript": JS_RULES,
    "typescript": JS_RULES,
    "tsx": JS_RULES,
    "go": GO_RULES,
    "rust": RUST_RULES,
    "java": JAVA_RULES,
    "kotlin": KOTLIN_RULES,
    "csharp": CSHARP_RULES,
    "c": C_RULES,
    "cpp": C_RULES,
    "ruby": RUBY_RULES,
    "php": PHP_RULES,
    "swift": SWIFT_RULES,
    "bash": BASH_RULES,
}
_EMPTY = RiskRules()
# The risk of a symbol with no finding (frozen: one instance serves every such symbol).
NO_RISK = Risk()


def import_aliases(imports: Iterable[ImportRef]) -> dict[str, str]:
    """Local name → dotted module path it stands for (``sp`` → ``subprocess``)."""
    out: dict[str, str] = {}
    for ref in imports:
        raw = ref.module
        if not ref.names and not ref.alias and "/" in raw and not raw.startswith("."):
            # Go binds the last path element: "net/http" -> http.
            out[raw.rsplit("/", 1)[-1]] = raw.replace("/", ".")
            continue
        module = raw.removeprefix("node:").replace("/", ".").replace("::", ".").strip(".")
        if not module:
            continue
        if ref.names:
            for name in ref.names:
                if name == "*":
                    continue
                local = ref.alias if ref.alias and len(ref.names) == 1 else name
                out[local] = f"{module}.{name}"
        else:
            local = ref.alias or module.split(".")[0]
            out[local] = module if ref.alias else local
    return out


def classify_call(rules: RiskRules, call: CallSite, aliases: Mapping[str, str]) -> tuple[str, str] | None:
    """(category, dotted name) when a call matches the language's table."""
    receiver = call.receiver
    if call.name not in rules.names and call.name not in aliases:
        if not receiver:
            return None
        root = receiver.split(".", 1)[0].split("::", 1)[0]
        if root not in rules.roots and aliases.get(root, root).split(".", 1)[0] not in rules.roots:
            return None
    if receiver and "::" in receiver:
        receiver = receiver.replace("::", ".")
    if receiver:
        root, dot, rest = receiver.partition(".")
        resolved = aliases.get(root)
        if resolved is not None:
            receiver = resolved + dot + rest
        dotted = f"{receiver}.{call.name}"
    else:
        dotted = aliases.get(call.name, call.name)
    category = rules.exact.get(dotted)
    if category is None and dotted.count(".") > 1:
        # Fully qualified spellings (System.IO.File.WriteAllText) match their short table entry.
        category = rules.exact.get(".".join(dotted.rsplit(".", 2)[-2:]))
    if category is not None:
        return category, dotted
    imported = not call.receiver or call.receiver.split(".", 1)[0].split("::", 1)[0] in aliases
    if rules.no_effect and _no_effect(dotted, rules.no_effect):
        return None
    if rules.prefixes and (imported or not rules.prefixes_need_import):
        head = dotted
        while "." in head:
            head = head.rsplit(".", 1)[0]
            category = rules.prefixes.get(head)
            if category is not None:
                return category, dotted
    if receiver and rules.methods:
        category = rules.methods.get(call.name)
        if category is not None:
            return category, dotted
    return None


def _no_effect(dotted: str, names: frozenset[str]) -> bool:
    head = dotted
    while True:
        if head in names:
            return True
        if "." not in head:
            return False
        head = head.rsplit(".", 1)[0]


def assess(
    language: str,
    calls: Iterable[CallSite],
    aliases: Mapping[str, str],
    *,
    control_flow: int = 0,
    max_nesting: int = 0,
    extra: Iterable[tuple[str, str]] = (),
    memo: dict[tuple[str | None, str], tuple[str, str] | None] | None = None,
) -> Risk:
    """Risk for one symbol from its calls, extra marks (``global`` statements) and complexity.

    ``memo`` caches call classifications; share one per file (the aliases must not change).
    """
    rules = RULES_BY_LANGUAGE.get(language, _EMPTY)
    found: dict[str, list[str]] = {}
    cache = memo if memo is not None else {}
    for call in calls:
        key = (call.receiver, call.name)
        if key in cache:
            hit = cache[key]
        else:
            hit = cache[key] = classify_call(rules, call, aliases)
        if hit is not None:
            found.setdefault(hit[0], []).append(hit[1])
    for category, detail in extra:
        found.setdefault(category, []).append(detail)
    complex_ = control_flow >= MODERATE_BRANCHES or max_nesting >= MODERATE_NESTING
    if not found and not complex_:
        return NO_RISK  # most symbols: nothing matched and nothing complex
    very_complex = control_flow >= HIGH_BRANCHES or max_nesting >= HIGH_NESTING
    reasons = [f"{category}: {', '.join(dict.fromkeys(details))}" for category, details in found.items()]
    if complex_:
        reasons.append(f"{COMPLEXITY}: {control_flow} branches, nesting {max_nesting}")
    categories = len(found) + (1 if complex_ else 0)
    if very_complex or categories >= HIGH_CATEGORY_COUNT or ALWAYS_HIGH.intersection(found):
        level = "high"
    elif categories:
        level = "medium"
    else:
        level = "low"
    return Risk(level, tuple(reasons[:MAX_REASONS]))  # type: ignore[arg-type]


_LANGUAGE_TITLES = {
    "python": "Python",
    "javascript": "JavaScript, TypeScript and TSX",
    "go": "Go",
    "rust": "Rust",
    "java": "Java",
    "kotlin": "Kotlin",
    "csharp": "C#",
    "c": "C and C++",
    "ruby": "Ruby",
    "php": "PHP",
    "swift": "Swift",
    "bash": "Bash",
}
_DOC_INTRO = f"""# Risk rules

Every symbol semfora extracts carries a risk level (`low`, `medium`, `high`) and the reasons
for it, such as `subprocess: subprocess.run` or `complexity: 14 branches, nesting 5`.
This page is generated from `engine/semantic/risk.py` (`render_risk_doc()`); a test keeps it in sync.

## How a call is matched

1. The call is written as a dotted name: receiver and name (`self.session.get`, `os.path.join`);
   `::` in C++/Rust/Ruby receivers counts as `.`.
2. Import aliases are resolved first, from the file's imports: `import subprocess as sp` makes
   `sp.run` read `subprocess.run`; `from os import system` makes `system` read `os.system`;
   `const cp = require('child_process')` makes `cp.exec` read `child_process.exec`; a Go import
   `"net/http"` binds `http`.
3. The dotted name is looked up in the language's **exact** table (a fully qualified spelling such as
   `System.IO.File.WriteAllText` also matches its last two parts, `File.WriteAllText`), then each
   dotted **prefix** (`requests.get` matches prefix `requests`), then, when the call has a receiver,
   the **method** table (`cursor.execute` matches method `execute` on any receiver).
   In JavaScript/TypeScript a prefix counts only when the file imports its root: `request.end()` on
   a local `request` (an `http.ClientRequest`) is no call into the npm package `request`, and
   `exec` is no method on any receiver (`/(\\w+):/.exec(s)` is a regular expression's).

Some effects come from the syntax rather than the tables: Python `open(path, "w")` (any mode with
`w`, `a`, `x` or `+`, positional or `mode=`) is a filesystem write. Global-state mutation comes
from a Python `global` statement or an assignment to `os.environ[...]` or an attribute of `sys`, `os` or
`builtins`, and in JavaScript/TypeScript from an assignment to `window.*`, `globalThis.*`, `global.*`, `process.env*`,
`document.*` or `self.*`.

## Categories

| category | meaning |
|---|---|
| `{NETWORK}` | talks to another machine (HTTP clients, sockets, RPC, mail) |
| `{FILESYSTEM}` | creates, writes, moves or deletes files (Python `open()` counts when its mode writes: `w`, `a`, `x` or `+`) |
| `{SUBPROCESS}` | runs other programs or evaluates code (`subprocess`, `exec`, `eval`, `pickle.loads`) |
| `{DYNAMIC_IMPORT}` | imports a module named at run time (`importlib.import_module`, `__import__`) |
| `{DATABASE}` | opens connections to or queries a database |
| `{CRYPTO}` | hashing, encryption, tokens, passwords, secrets and environment-variable reads |
| `{GLOBAL_STATE}` | changes process-wide state (environment, working directory, globals) |
| `{COMPLEXITY}` | ≥ {MODERATE_BRANCHES} branches or nesting ≥ {MODERATE_NESTING} (moderate); ≥ {HIGH_BRANCHES} branches or nesting ≥ {HIGH_NESTING} (very complex) |

Branches are counted per language from the syntax: `if`/`elif`/`else if`, loops, `case`/`when`
arms, `catch`/`except`/`rescue`, conditional expressions, and `&&`/`||`/`and`/`or`/`??`.
Nesting counts nested `if`/loop/`switch`/`match`/`try`/`with` blocks inside one symbol
(a nested function starts again at zero).

## Level

- **high**: any `{SUBPROCESS}` call, or {HIGH_CATEGORY_COUNT} or more categories (moderate complexity counts as
  one), or very complex;
- **medium**: exactly one category, or moderately complex;
- **low**: none of the above.

At most {MAX_REASONS} reasons are listed per symbol; each names the category and the calls that matched.
"""


def render_risk_doc() -> str:
    """docs/risk.md, generated from the tables above."""
    parts = [_DOC_INTRO]
    seen: set[int] = set()
    for language, rules in RULES_BY_LANGUAGE.items():
        if id(rules) in seen:
            continue
        seen.add(id(rules))
        parts.append(f"\n## {_LANGUAGE_TITLES.get(language, language)}\n")
        for label, table in (
            ("exact call", rules.exact),
            ("prefix", rules.prefixes),
            ("method", rules.methods),
        ):
            by_category: dict[str, list[str]] = {}
            for key, category in table.items():
                by_category.setdefault(category, []).append(key)
            if not by_category:
                continue
            parts.append(f"\n**{label}**\n")
            for category in sorted(by_category):
                names = ", ".join(f"`{name}`" for name in sorted(by_category[category]))
                parts.append(f"- {category}: {names}\n")
        if rules.no_effect:
            names = ", ".join(f"`{name}`" for name in sorted(rules.no_effect))
            parts.append(f"\n**no effect** (and their members, though a prefix above matches)\n\n- {names}\n")
    return "".join(parts)
