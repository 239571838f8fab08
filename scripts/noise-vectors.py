#!/usr/bin/env python3
"""Independent Noise (revision 34) reference for 25519/ChaChaPoly/SHA256, and a generator of
fresh test vectors in the cacophony JSON format that `mesh-vectors noise FILE` reads.

Written from the Noise specification (noiseprotocol.org/noise.html), not from MeshCrypto.
Needs python3 with the `cryptography` package.

  scripts/noise-vectors.py check FILE           recompute every vector of FILE, report mismatches
  scripts/noise-vectors.py generate [-o FILE]   draw fresh vectors (seed: $NOISE_VECTOR_SEED,
                                                else random; printed on stderr)
"""
import argparse, hashlib, hmac, json, os, random, re, sys
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives import serialization

SUFFIX = "_25519_ChaChaPoly_SHA256"
HASHLEN, DHLEN = 32, 32

# Handshake patterns (spec sections 7.4, 7.5, 7.6): (initiator pre-messages, responder
# pre-messages, messages); messages alternate initiator -> responder, responder -> initiator.
PATTERNS_TEXT = """
N  | | s | e es
K  | s | s | e es ss
X  | | s | e es s ss
NN | | | e ; e ee
NK | | s | e es ; e ee
NX | | | e ; e ee s es
KN | s | | e ; e ee se
KK | s | s | e es ss ; e ee se
KX | s | | e ; e ee se s es
XN | | | e ; e ee ; s se
XK | | s | e es ; e ee ; s se
XX | | | e ; e ee s es ; s se
IN | | | e s ; e ee se
IK | | s | e es s ss ; e ee se
IX | | | e s ; e ee se s es
NK1 | | s | e ; e ee es
NX1 | | | e ; e ee s ; es
X1N | | | e ; e ee ; s ; se
X1K | | s | e es ; e ee ; s ; se
XK1 | | s | e ; e ee es ; s se
X1K1 | | s | e ; e ee es ; s ; se
X1X | | | e ; e ee s es ; s ; se
XX1 | | | e ; e ee s ; es s se
X1X1 | | | e ; e ee s ; es s ; se
K1N | s | | e ; e ee ; se
K1K | s | s | e es ; e ee ; se
KK1 | s | s | e ; e ee se es
K1K1 | s | s | e ; e ee es ; se
K1X | s | | e ; e ee s es ; se
KX1 | s | | e ; e ee se s ; es
K1X1 | s | | e ; e ee s ; se es
I1N | | | e s ; e ee ; se
I1K | | s | e es s ; e ee ; se
IK1 | | s | e s ; e ee se es
I1K1 | | s | e s ; e ee es ; se
I1X | | | e s ; e ee s es ; se
IX1 | | | e s ; e ee se s ; es
I1X1 | | | e s ; e ee s ; se es
"""
PATTERNS = {}
for line in PATTERNS_TEXT.strip().splitlines():
    name, ipre, rpre, msgs = [p.strip() for p in line.split("|")]
    PATTERNS[name] = (ipre.split(), rpre.split(), [m.split() for m in msgs.split(";")])


def parse_pattern(pattern):
    """'XXpsk0+psk3' -> (pre_i, pre_r, messages with psk tokens placed), or raises KeyError."""
    m = re.fullmatch(r"([A-Z1]+?)((?:psk\d)(?:\+psk\d)*)?", pattern)
    if not m or m.group(1) not in PATTERNS:
        raise KeyError(pattern)
    ipre, rpre, msgs = PATTERNS[m.group(1)]
    msgs = [list(x) for x in msgs]
    for mod in (m.group(2) or "").split("+"):
        if not mod:
            continue
        n = int(mod[3:])
        if n == 0:
            msgs[0].insert(0, "psk")
        elif n <= len(msgs):
            msgs[n - 1].append("psk")
        else:
            raise KeyError(pattern)
    return ipre, rpre, msgs


def pub(priv):
    return X25519PrivateKey.from_private_bytes(priv).public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def dh(priv, public):
    return X25519PrivateKey.from_private_bytes(priv).exchange(X25519PublicKey.from_public_bytes(public))


def H(data):
    return hashlib.sha256(data).digest()


def hkdf(ck, ikm, n):
    temp = hmac.new(ck, ikm, hashlib.sha256).digest()
    out, prev = [], b""
    for i in range(1, n + 1):
        prev = hmac.new(temp, prev + bytes([i]), hashlib.sha256).digest()
        out.append(prev)
    return out


class CipherState:
    def __init__(self, k=None):
        self.k, self.n = k, 0

    def encrypt(self, ad, pt):
        if self.k is None:
            return pt
        nonce = b"\0\0\0\0" + self.n.to_bytes(8, "little")
        self.n += 1
        return ChaCha20Poly1305(self.k).encrypt(nonce, pt, ad)

    def decrypt(self, ad, ct):
        if self.k is None:
            return ct
        nonce = b"\0\0\0\0" + self.n.to_bytes(8, "little")
        out = ChaCha20Poly1305(self.k).decrypt(nonce, ct, ad)  # raises InvalidTag
        self.n += 1
        return out


class SymmetricState:
    def __init__(self, name):
        name = name.encode()
        self.h = name + b"\0" * (HASHLEN - len(name)) if len(name) <= HASHLEN else H(name)
        self.ck = self.h
        self.cs = CipherState()

    def mix_key(self, ikm):
        self.ck, k = hkdf(self.ck, ikm, 2)
        self.cs = CipherState(k)

    def mix_hash(self, data):
        self.h = H(self.h + data)

    def mix_key_and_hash(self, ikm):
        self.ck, th, k = hkdf(self.ck, ikm, 3)
        self.mix_hash(th)
        self.cs = CipherState(k)

    def encrypt_and_hash(self, pt):
        ct = self.cs.encrypt(self.h, pt)
        self.mix_hash(ct)
        return ct

    def decrypt_and_hash(self, ct):
        pt = self.cs.decrypt(self.h, ct)
        self.mix_hash(ct)
        return pt

    def split(self):
        k1, k2 = hkdf(self.ck, b"", 2)
        return CipherState(k1), CipherState(k2)


class HandshakeState:
    """One side of a handshake. Keys are private-key bytes (s, e) and public-key bytes (rs)."""

    def __init__(self, name, initiator, prologue, s=None, e=None, rs=None, psks=()):
        pattern = name.split("_")[1]
        ipre, rpre, self.msgs = parse_pattern(pattern)
        self.ss = SymmetricState(name)
        self.ss.mix_hash(prologue)
        self.initiator, self.s, self.e, self.rs, self.re = initiator, s, e, rs, None
        self.psks = list(psks)
        self.has_psk = "psk" in pattern
        for tok in ipre:  # initiator's pre-message keys first, then the responder's
            self.ss.mix_hash(pub(s) if initiator else rs)
        for tok in rpre:
            self.ss.mix_hash(rs if initiator else pub(s))
        self.index = 0

    def _dh(self, tok):
        a, b = tok  # 'e'/'s' of initiator, 'e'/'s' of responder
        mine, theirs = (a, b) if self.initiator else (b, a)
        priv = self.e if mine == "e" else self.s
        public = self.re if theirs == "e" else self.rs
        self.ss.mix_key(dh(priv, public))

    def _psk(self):
        psk = self.psks.pop(0)
        if len(psk) != 32:
            raise ValueError("a psk is 32 bytes")
        self.ss.mix_key_and_hash(psk)

    def write(self, payload):
        out = b""
        for tok in self.msgs[self.index]:
            if tok == "e":
                epub = pub(self.e)
                out += epub
                self.ss.mix_hash(epub)
                if self.has_psk:
                    self.ss.mix_key(epub)
            elif tok == "s":
                out += self.ss.encrypt_and_hash(pub(self.s))
            elif tok == "psk":
                self._psk()
            else:
                self._dh(tok)
        out += self.ss.encrypt_and_hash(payload)
        self.index += 1
        return out

    def read(self, msg):
        for tok in self.msgs[self.index]:
            if tok == "e":
                self.re, msg = msg[:DHLEN], msg[DHLEN:]
                self.ss.mix_hash(self.re)
                if self.has_psk:
                    self.ss.mix_key(self.re)
            elif tok == "s":
                n = DHLEN + (16 if self.ss.cs.k is not None else 0)
                self.rs = self.ss.decrypt_and_hash(msg[:n])
                msg = msg[n:]
            elif tok == "psk":
                self._psk()
            else:
                self._dh(tok)
        payload = self.ss.decrypt_and_hash(msg)
        self.index += 1
        return payload

    @property
    def done(self):
        return self.index == len(self.msgs)


def h2b(v):
    return bytes.fromhex(v) if v is not None else None


def run_vector(v):
    """Recompute a cacophony-format vector from its inputs and payloads.
    Returns (handshake_hash, [ciphertext, ...]) as hex, checking that each message decrypts."""
    name = v["protocol_name"]
    one_way = re.match(r"[A-Z1]+", name.split("_")[1]).group(0) in ("N", "K", "X")
    psks = lambda side: [h2b(p) for p in v.get(side + "_psks") or []]
    init = HandshakeState(name, True, h2b(v["init_prologue"]), h2b(v.get("init_static")),
                          h2b(v.get("init_ephemeral")), h2b(v.get("init_remote_static")), psks("init"))
    resp = HandshakeState(name, False, h2b(v["resp_prologue"]), h2b(v.get("resp_static")),
                          h2b(v.get("resp_ephemeral")), h2b(v.get("resp_remote_static")), psks("resp"))
    cts, hh, sender, receiver = [], None, init, resp
    send_i = recv_r = send_r = recv_i = None
    for i, m in enumerate(v["messages"]):
        payload = h2b(m["payload"])
        if not init.done:
            ct = sender.write(payload)
            if receiver.read(ct) != payload:
                raise ValueError(f"message {i + 1} decrypts to another payload")
            if init.done:
                if init.ss.h != resp.ss.h:
                    raise ValueError("the two sides' handshake hashes differ")
                hh = init.ss.h.hex()
                send_i, send_r = init.ss.split()
                recv_r, recv_i = resp.ss.split()
            sender, receiver = receiver, sender
        else:
            # After the handshake: one-way patterns keep the initiator sending; interactive ones
            # keep alternating.
            from_init = one_way or sender is init
            if from_init:
                ct = send_i.encrypt(b"", payload)
                recv_r.decrypt(b"", ct)
            else:
                ct = send_r.encrypt(b"", payload)
                recv_i.decrypt(b"", ct)
            if not one_way:
                sender, receiver = receiver, sender
        cts.append(ct.hex())
    if hh is None:
        hh = init.ss.h.hex()
    return hh, cts


def check(path):
    vectors = json.load(open(path))["vectors"]
    bad = 0
    for i, v in enumerate(vectors, 1):
        try:
            hh, cts = run_vector(v)
        except KeyError as e:
            print(f"#{i} {v.get('protocol_name')}: unsupported ({e})")
            bad += 1
            continue
        except Exception as e:  # a message that does not decrypt, a wrong key length, ...
            if not v.get("fail"):
                print(f"#{i} {v['protocol_name']}: {type(e).__name__} {e}")
                bad += 1
            continue
        problems = []
        if v.get("handshake_hash") and hh != v["handshake_hash"].lower():
            problems.append("handshake_hash")
        for j, (m, ct) in enumerate(zip(v["messages"], cts)):
            if ct != m["ciphertext"].lower():
                problems.append(f"message {j + 1}")
        if bool(problems) != bool(v.get("fail")):
            bad += 1
            print(f"#{i} {v['protocol_name']}: " + ("mismatch in " + ", ".join(problems) if problems
                  else "expected a failure, but every value matched"))
    print(f"{len(vectors) - bad} of {len(vectors)} vectors as expected")
    return bad == 0


def base_patterns():
    return list(PATTERNS)


def psk_variants(rng, base):
    n = len(PATTERNS[base][2])
    choices = [f"psk{i}" for i in range(n + 1)]
    k = rng.choice([1, 1, 1, 2])
    mods = sorted(rng.sample(choices, min(k, len(choices))), key=lambda s: int(s[3:]))
    return base + "+".join(mods)


def generate(rng, count):
    """Fresh vectors: every base pattern, plus psk variants, with random keys, prologues and
    payload lengths; message counts from the handshake length to a few transport messages."""
    lengths = [0, 1, 15, 16, 17, 100, 255, 1000, 4000]
    vectors = []
    patterns = base_patterns()
    while len(vectors) < count:
        base = patterns[len(vectors) % len(patterns)]
        pattern = psk_variants(rng, base) if rng.random() < 0.4 else base
        name = "Noise_" + pattern + SUFFIX
        ipre, rpre, msgs = parse_pattern(pattern)
        rb = lambda n: bytes(rng.getrandbits(8) for _ in range(n))
        tokens = {t for m in msgs for t in m}
        init_s = rb(32) if ("s" in ipre or any("s" in m for m in msgs[0::2])) else None
        resp_s = rb(32) if ("s" in rpre or any("s" in m for m in msgs[1::2])) else None
        prologue = rng.choice([b"", rb(1), rb(rng.randrange(2, 64)), rb(rng.randrange(200, 2000))])
        v = {"protocol_name": name, "init_prologue": prologue.hex()}
        if "psk" in tokens:
            psks = [rb(32).hex() for m in msgs for t in m if t == "psk"]
            v["init_psks"] = psks
        if init_s:
            v["init_static"] = init_s.hex()
        v["init_ephemeral"] = rb(32).hex()
        if "s" in rpre:
            v["init_remote_static"] = pub(resp_s).hex()
        v["resp_prologue"] = prologue.hex()
        if "psk" in tokens:
            v["resp_psks"] = list(v["init_psks"])
        if resp_s:
            v["resp_static"] = resp_s.hex()
        if any("e" in m for m in msgs[1::2]):
            v["resp_ephemeral"] = rb(32).hex()
        if "s" in ipre:
            v["resp_remote_static"] = pub(init_s).hex()
        n_msgs = len(msgs) + rng.choice([0, 0, 1, 2, 3, 5])
        v["messages"] = [{"payload": rb(rng.choice(lengths)).hex()} for _ in range(n_msgs)]
        hh, cts = run_vector(v)
        v["handshake_hash"] = hh
        for m, ct in zip(v["messages"], cts):
            m["ciphertext"] = ct
        # key order as in the public file: handshake_hash before messages
        v = {k: v[k] for k in [k for k in v if k != "messages"] + ["messages"]}
        vectors.append(v)
    return vectors


def make_failing(rng, v):
    """Turn a good vector into one that must fail (`"fail": true`): the responder's prologue or
    psk differs, the initiator knows a wrong responder key, or an expected ciphertext is off."""
    kinds = ["prologue", "ciphertext"]
    if v.get("resp_psks"):
        kinds.append("psk")
    if v.get("init_remote_static"):
        kinds.append("remote_static")
    kind = rng.choice(kinds)
    if kind == "prologue":
        v["resp_prologue"] += "00"
    elif kind == "psk":
        v["resp_psks"][-1] = bytes(rng.getrandbits(8) for _ in range(32)).hex()
    elif kind == "remote_static":
        v["init_remote_static"] = pub(bytes(rng.getrandbits(8) for _ in range(32))).hex()
    else:
        m = rng.choice(v["messages"])
        ct = bytearray.fromhex(m["ciphertext"])
        ct[rng.randrange(len(ct))] ^= 1 << rng.randrange(8)
        m["ciphertext"] = ct.hex()
    v["fail"] = True
    return v


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check")
    c.add_argument("file")
    g = sub.add_parser("generate")
    g.add_argument("-o", "--output", default="-")
    g.add_argument("-n", "--count", type=int, default=len(PATTERNS) * 3)
    g.add_argument("--failing", type=int, default=0, help='also this many "fail": true vectors')
    args = ap.parse_args()
    if args.cmd == "check":
        sys.exit(0 if check(args.file) else 1)
    seed = os.environ.get("NOISE_VECTOR_SEED") or str(random.SystemRandom().getrandbits(64))
    print(f"NOISE_VECTOR_SEED={seed}", file=sys.stderr)
    rng = random.Random(seed)
    vectors = generate(rng, args.count)
    vectors += [make_failing(rng, v) for v in generate(rng, args.failing)]
    doc = {"source": f"scripts/noise-vectors.py, NOISE_VECTOR_SEED={seed}", "vectors": vectors}
    text = json.dumps(doc, indent=1) + "\n"
    if args.output == "-":
        sys.stdout.write(text)
    else:
        open(args.output, "w").write(text)


if __name__ == "__main__":
    main()
