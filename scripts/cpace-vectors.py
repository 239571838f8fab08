#!/usr/bin/env python3
"""Independent CPace reference (draft-irtf-cfrg-cpace, CPace-RISTR255-SHA512) with a pure-Python
ristretto255 (RFC 9496), and a generator of fresh test vectors in the JSON format that
`mesh-vectors cpace FILE` reads (the fields of the draft's ristretto255 vector).

Written from the two specifications, not from MeshCrypto. Needs only python3. Slow (pure-Python
field arithmetic) but fine for a few hundred vectors.

  scripts/cpace-vectors.py check FILE           recompute every field of FILE, report mismatches
  scripts/cpace-vectors.py generate [-o FILE]   draw fresh vectors (seed: $CPACE_VECTOR_SEED,
                                                else random; printed on stderr)
"""
import argparse, hashlib, json, os, random, sys

# --- ristretto255 (RFC 9496) over edwards25519, affine-free extended coordinates ------------
P = 2**255 - 19
L = 2**252 + 27742317777372353535851937790883648493
D = (-121665 * pow(121666, P - 2, P)) % P
SQRT_M1 = 19681161376707505956807079304988542015446066515923890162744021073123829784752
SQRT_AD_MINUS_ONE = 25063068953384623474111414158702152701244531502492656460079210482610430750235
INVSQRT_A_MINUS_D = 54469307008909316920995813868745141605393597292927456921205312896311721017578
ONE_MINUS_D_SQ = 1159843021668779879193775521855586647937357759715417654439879720876111806838
D_MINUS_ONE_SQ = 40440834346308536858101042469323190826248399146238708352240133220865137265952
assert SQRT_M1 * SQRT_M1 % P == P - 1
assert SQRT_AD_MINUS_ONE ** 2 % P == (-D - 1) % P
assert INVSQRT_A_MINUS_D ** 2 * (-1 - D) % P == 1
assert ONE_MINUS_D_SQ == (1 - D * D) % P and D_MINUS_ONE_SQ == (D - 1) ** 2 % P


def is_negative(x):
    return (x % P) & 1


def ct_abs(x):
    return (-x) % P if is_negative(x) else x % P


def sqrt_ratio_m1(u, v):
    u, v = u % P, v % P
    v3 = v * v % P * v % P
    v7 = v3 * v3 % P * v % P
    r = u * v3 % P * pow(u * v7 % P, (P - 5) // 8, P) % P
    check = v * r % P * r % P
    correct = check == u
    flipped = check == (-u) % P
    flipped_i = check == (-u) * SQRT_M1 % P
    if flipped or flipped_i:
        r = r * SQRT_M1 % P
    return correct or flipped, ct_abs(r)


IDENTITY = (0, 1, 1, 0)


def add(p1, p2):
    """Extended-coordinate addition on -x^2 + y^2 = 1 + d x^2 y^2 (complete formula)."""
    x1, y1, z1, t1 = p1
    x2, y2, z2, t2 = p2
    a = (y1 - x1) * (y2 - x2) % P
    b = (y1 + x1) * (y2 + x2) % P
    c = 2 * D * t1 * t2 % P
    d = 2 * z1 * z2 % P
    e, f, g, h = b - a, d - c, d + c, b + a
    return (e * f % P, g * h % P, f * g % P, e * h % P)


def mul(k, point):
    result = IDENTITY
    for bit in bin(k)[2:]:
        result = add(result, result)
        if bit == "1":
            result = add(result, point)
    return result


def encode(point):
    x0, y0, z0, t0 = point
    u1 = (z0 + y0) * (z0 - y0) % P
    u2 = x0 * y0 % P
    _, invsqrt = sqrt_ratio_m1(1, u1 * u2 * u2)
    den1 = invsqrt * u1 % P
    den2 = invsqrt * u2 % P
    z_inv = den1 * den2 * t0 % P
    if is_negative(t0 * z_inv):
        x, y, den_inv = y0 * SQRT_M1 % P, x0 * SQRT_M1 % P, den1 * INVSQRT_A_MINUS_D % P
    else:
        x, y, den_inv = x0, y0, den2
    if is_negative(x * z_inv):
        y = -y
    s = ct_abs(den_inv * (z0 - y))
    return s.to_bytes(32, "little")


def decode(data):
    """The point encoded by 32 bytes, or None for an invalid encoding."""
    if len(data) != 32:
        return None
    s = int.from_bytes(data, "little")
    if s >= P or is_negative(s):
        return None
    ss = s * s % P
    u1, u2 = (1 - ss) % P, (1 + ss) % P
    u2_sqr = u2 * u2 % P
    v = (-(D * u1 * u1) - u2_sqr) % P
    was_square, invsqrt = sqrt_ratio_m1(1, v * u2_sqr)
    den_x = invsqrt * u2 % P
    den_y = invsqrt * den_x % P * v % P
    x = ct_abs(2 * s * den_x)
    y = u1 * den_y % P
    t = x * y % P
    if not was_square or is_negative(t) or y == 0:
        return None
    return (x, y, 1, t)


def elligator(t):
    r = SQRT_M1 * t * t % P
    u = (r + 1) * ONE_MINUS_D_SQ % P
    v = (-1 - r * D) * (r + D) % P
    was_square, s = sqrt_ratio_m1(u, v)
    if not was_square:
        s, c = (-ct_abs(s * t)) % P, r
    else:
        c = P - 1
    n = (c * (r - 1) * D_MINUS_ONE_SQ - v) % P
    w0, w1 = 2 * s * v % P, n * SQRT_AD_MINUS_ONE % P
    w2, w3 = (1 - s * s) % P, (1 + s * s) % P
    return (w0 * w3 % P, w2 * w1 % P, w1 * w3 % P, w0 * w2 % P)


def from_uniform_bytes(b):
    t1 = int.from_bytes(b[:32], "little") & ((1 << 255) - 1)
    t2 = int.from_bytes(b[32:64], "little") & ((1 << 255) - 1)
    return add(elligator(t1), elligator(t2))


def self_test():
    """RFC 9496 A.1: encodings of 0*B, B, 2B; A.3: one from_uniform_bytes vector."""
    base = decode(bytes.fromhex("e2f2ae0a6abc4e71a884a961c500515f58e30b6aa582dd8db6a65945e08d2d76"))
    assert encode(IDENTITY) == bytes(32)
    assert encode(mul(2, base)).hex() == "6a493210f7499cd17fecb510ae0cea23a110e8d5b901f8acadd3095c73a3b919"
    assert encode(mul(L, base)) == bytes(32)
    h = hashlib.sha512(b"Ristretto is traditionally a short shot of espresso coffee").digest()
    assert encode(from_uniform_bytes(h)).hex() == \
        "3066f82a1a747d45120d1740f14358531a8f04bbffe6a819f86dfe50f44a0a46"


# --- CPace (draft-irtf-cfrg-cpace), CPace-RISTR255-SHA512 ------------------------------------
DSI = b"CPaceRistretto255"
S_IN_BYTES = 128  # SHA-512 block size


def prepend_len(data):
    n, out = len(data), b""
    while True:  # LEB128
        byte = n & 0x7F
        n >>= 7
        if n:
            out += bytes([byte | 0x80])
        else:
            return out + bytes([byte]) + data


def lv_cat(*items):
    return b"".join(prepend_len(i) for i in items)


def generator_string(prs, ci, sid):
    zpad = max(0, S_IN_BYTES - len(prepend_len(prs)) - len(prepend_len(DSI)) - 1)
    return lv_cat(DSI, prs, bytes(zpad), ci, sid)


def lexiographically_larger(a, b):
    for x, y in zip(a, b):
        if x != y:
            return x > y
    return len(a) > len(b)


def o_cat(a, b):
    return b"oc" + (a + b if lexiographically_larger(a, b) else b + a)


def cpace(prs, ci, sid, ada, adb, ya=None, yb=None):
    """Every value of the draft's vector, as a dict of hex strings (only the generator's without
    scalars). ya, yb: 32 little-endian bytes, read as an integer. Raises ValueError when a share
    or K is the identity (the draft's scalar_mult_vfy aborts)."""
    gs = generator_string(prs, ci, sid)
    gh = hashlib.sha512(gs).digest()
    g = from_uniform_bytes(gh)
    out = {"generator_string_hex": gs.hex(), "generator_hash_hex": gh.hex(), "generator_g_hex": encode(g).hex()}
    if ya is None or yb is None:
        return out
    if len(ya) != 32 or len(yb) != 32:
        raise ValueError("a scalar is 32 bytes")
    a, b = int.from_bytes(ya, "little"), int.from_bytes(yb, "little")
    Ya, Yb = encode(mul(a, g)), encode(mul(b, g))
    K = encode(mul(a, decode(Yb)))
    if K != encode(mul(b, decode(Ya))) or K == bytes(32):
        raise ValueError("K is the identity")
    t_ir = lv_cat(Ya, ada) + lv_cat(Yb, adb)
    t_oc = o_cat(lv_cat(Ya, ada), lv_cat(Yb, adb))
    prefix = lv_cat(DSI + b"_ISK", sid, K)
    out.update({
        "Ya_hex": Ya.hex(), "Yb_hex": Yb.hex(), "K_hex": K.hex(),
        "transcript_ir_hex": t_ir.hex(), "ISK_ir_hex": hashlib.sha512(prefix + t_ir).hexdigest(),
        "transcript_oc_hex": t_oc.hex(), "ISK_oc_hex": hashlib.sha512(prefix + t_oc).hexdigest(),
    })
    return out


INPUTS = ["PRS_hex", "CI_hex", "sid_hex", "ADa_hex", "ADb_hex"]


def run_vector(v):
    """The vector's inputs (absent or null: empty; absent scalars: only the generator)."""
    args = [bytes.fromhex(v.get(k) or "") for k in INPUTS]
    scalars = [bytes.fromhex(v[k]) if v.get(k) is not None else None for k in ("ya_le_hex", "yb_le_hex")]
    return cpace(*args, *scalars)


def check(path):
    doc = json.load(open(path))
    vectors = doc if isinstance(doc, list) else doc["vectors"] if "vectors" in doc else [doc]
    bad = 0
    for i, v in enumerate(vectors, 1):
        if v.get("DSI", DSI.decode()) != DSI.decode():
            print(f"#{i}: unsupported (DSI {v['DSI']})")
            continue
        try:
            out = run_vector(v)
        except ValueError as e:
            bad += 1
            print(f"#{i}: {e}")
            continue
        problems = [k for k, value in out.items() if v.get(k) is not None and v[k].lower() != value]
        if problems:
            bad += 1
            print(f"#{i}: mismatch in " + ", ".join(problems))
    print(f"{len(vectors) - bad} of {len(vectors)} vectors reproduced")
    return bad == 0


def generate(rng, count):
    """Fresh vectors: random passwords (empty to 200 bytes, so the zero padding shrinks to none
    and the length prefix grows to two bytes), channel identifiers, sids (empty to 64 bytes),
    associated data (empty to 300 bytes) and scalars (one in five >= L, up to 2^256 - 1)."""
    rb = lambda n: bytes(rng.getrandbits(8) for _ in range(n))
    size = lambda *choices: rng.choice(choices)
    vectors = []
    for _ in range(count):
        v = {
            "suite": "CPace-RISTR255-SHA512 (fresh, scripts/cpace-vectors.py)",
            "PRS_hex": rb(size(0, 1, 8, 32, 99, 100, 101, 127, 128, 200)).hex(),
            "DSI": DSI.decode(),
            "CI_hex": rb(size(0, 1, 24, 127, 128, 300)).hex(),
            "sid_hex": rb(size(0, 16, 32, 64)).hex(),
        }
        v["ADa_hex"] = rb(size(0, 3, 50, 127, 128, 300)).hex()
        v["ADb_hex"] = rb(size(0, 3, 50, 127, 128, 300)).hex()
        # Mostly scalars in [1, L) as the draft samples them; sometimes any 256-bit integer.
        scalar = lambda: rng.randrange(1, L) if rng.random() < 0.8 else rng.randrange(L, 2**256)
        v["ya_le_hex"] = scalar().to_bytes(32, "little").hex()
        v["yb_le_hex"] = scalar().to_bytes(32, "little").hex()
        out = run_vector(v)
        ordered = {k: v[k] for k in ["suite", "PRS_hex", "DSI", "CI_hex", "sid_hex"]}
        ordered.update({k: out[k] for k in ["generator_string_hex", "generator_hash_hex", "generator_g_hex"]})
        ordered.update({k: v[k] for k in ["ADa_hex", "ADb_hex", "ya_le_hex"]})
        ordered["Ya_hex"] = out["Ya_hex"]
        ordered["yb_le_hex"] = v["yb_le_hex"]
        ordered.update({k: out[k] for k in ["Yb_hex", "K_hex", "transcript_ir_hex", "ISK_ir_hex",
                                            "transcript_oc_hex", "ISK_oc_hex"]})
        vectors.append(ordered)
    return vectors


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("check").add_argument("file")
    g = sub.add_parser("generate")
    g.add_argument("-o", "--output", default="-")
    g.add_argument("-n", "--count", type=int, default=50)
    args = ap.parse_args()
    self_test()
    if args.cmd == "check":
        sys.exit(0 if check(args.file) else 1)
    seed = os.environ.get("CPACE_VECTOR_SEED") or str(random.SystemRandom().getrandbits(64))
    print(f"CPACE_VECTOR_SEED={seed}", file=sys.stderr)
    doc = {"source": f"scripts/cpace-vectors.py, CPACE_VECTOR_SEED={seed}",
           "vectors": generate(random.Random(seed), args.count)}
    text = json.dumps(doc, indent=1) + "\n"
    if args.output == "-":
        sys.stdout.write(text)
    else:
        open(args.output, "w").write(text)


if __name__ == "__main__":
    main()
