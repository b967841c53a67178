"""Inline PTX the CPU runner translates: the single instructions that code writes in asm() where CUDA C
has no function for them, each rewritten as a call of runtime.h's (nn_cuda_cpu::ptx_*).

    asm("mov.u32 %0, %%laneid;" : "=r"(lane));                 lane = nn_cuda_cpu::ptx_lane_id() (.b32, .s32 too)
    asm("mov.u32 %0, %%lanemask_lt;" : "=r"(mask));            (le, eq, ge, gt alike)
    asm volatile("mov.b64 %0, {%1,%2};" : "=l"(x) : "r"(lo), "r"(hi));   two 32-bit halves into 64 bits
    asm volatile("mov.b64 {%0,%1}, %2;" : "=r"(lo), "=r"(hi) : "d"(x));  and back (OpenMM's shuffle of a double)
    asm("{ cvt.rn.f16.f32 %0, %1;}\\n" : "=h"(bits) : "f"(x));  float to half bits, rn/rz/rm/rp (MXNet's half-inl.h)
    asm("cvt.f32.f16 %0, %1;" : "=f"(x) : "h"(bits));          and back
    asm("prmt.b32 %0, %1, 0, 0x0123;" : "=r"(y) : "r"(x));     bytes permuted (hashcat's byte swap)
    asm("lop3.b32 %0, %1, %2, %3, 0x96;" : ...);              any function of three bits (0x96: a ^ b ^ c)
    asm("bfe.u32 %0, %1, 8, 8;" : ...);                        a bit field (bfe.s32: sign-extended)
    asm("shf.l.wrap.b32 %0, %1, %2, %3;" : ...);               a funnel shift (l or r, wrap or clamp)
    asm("trap;");                                               __trap()
    asm("red.relaxed.gpu.global.add.f32 [%0], %1;" :: "l"(p), "r"(bits));   atomicAdd, no old value kept
                                                                (f64, u32, s32, u64, f16, f16x2: tiny-cuda-nn)

Every other asm statement is left as it is, and the build then stops on it with the one-line message
for inline PTX (build.py). The rewrite keeps the statement's lines, so that messages name the code's.
"""

from __future__ import annotations

import re

#: the header of the calls it writes, which a module whose code it translates includes before the code
HELPERS = "#include <nn_cuda_cpu_inline_ptx.h>\n"
#: the start of an asm statement: asm, __asm__ or __asm, volatile or not
_ASM = re.compile(r"\b(?:asm|__asm__|__asm)\s*(?:volatile\b|__volatile__\b)?\s*\(")
#: a C string literal
_STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
#: an operand: its constraint and its C expression
_OPERAND = re.compile(r'^\s*"(?P<constraint>[^"]*)"\s*\((?P<expression>.*)\)\s*$', re.S)

_SPECIAL_MASKS = ("lt", "le", "eq", "ge", "gt")
#: PTX's rounding of cvt.f16.f32 -> the runner's (nn_cuda_cpu_narrow_float.h)
_HALF_ROUNDING = {"rn": "nearest_even", "rz": "toward_zero", "rm": "down", "rp": "up"}


def _closing(text: str, start: int) -> int | None:
    """The index of the `)` that closes the `(` before `start`, skipping strings, or None."""
    depth, i = 1, start
    while i < len(text):
        char = text[i]
        if char == '"':
            string = _STRING.match(text, i)
            if string is None:
                return None
            i = string.end()
            continue
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0:
            return i
        i += 1
    return None


def _top_level_split(text: str, separator: str) -> list[str]:
    """`text` split at each `separator` outside parentheses and strings."""
    parts, depth, current, i = [], 0, [], 0
    while i < len(text):
        char = text[i]
        if char == '"':
            string = _STRING.match(text, i)
            end = string.end() if string else len(text)
            current.append(text[i:end])
            i = end
            continue
        if char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        if char == separator and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
        i += 1
    parts.append("".join(current))
    return parts


def _instruction(strings: str) -> str:
    """The template's text as one normalized instruction: escapes read, braces, the `;` and `%%` gone."""
    text = strings.replace("\\n", " ").replace("\\t", " ").replace("%%", "%").strip()
    if text.startswith("{") and text.endswith("}"):  # a scope of its own
        text = text[1:-1].strip()
    text = re.sub(r"\s+", " ", text.rstrip(";").strip())
    return re.sub(r"\s*,\s*", ",", re.sub(r"\{\s*", "{", re.sub(r"\s*\}", "}", text)))


#: an operand of an instruction: %N, or an immediate integer
_OPERAND_TOKEN = r"(%\d+|-?(?:0[xX][0-9a-fA-F]+|\d+))"
#: the integer instructions of three or four operands: mnemonic -> the runtime's function
_INTEGER = {"prmt.b32": "ptx_prmt", "lop3.b32": "ptx_lop3", "bfe.u32": "ptx_bfe_u32", "bfe.s32": "ptx_bfe_s32",
            "shf.l.wrap.b32": "ptx_shf_l_wrap", "shf.r.wrap.b32": "ptx_shf_r_wrap",
            "shf.l.clamp.b32": "ptx_shf_l_clamp", "shf.r.clamp.b32": "ptx_shf_r_clamp"}


#: red[.sem][.scope][.global].add[.noftz].type [%a], b;: an atomic add that keeps no old value
_RED_ADD = re.compile(r"red(?:\.relaxed|\.release)?(?:\.cta|\.cluster|\.gpu|\.sys)?(?:\.global)?\.add(?:\.noftz)?"
                      r"\.(?P<type>\w+) \[%(?P<address>\d+)\]," + _OPERAND_TOKEN.replace("(", "(?P<value>", 1))
#: its types -> the element type of CUDA C's atomicAdd
_RED_ADD_TYPES = {"f32": "float", "f64": "double", "u32": "unsigned int", "s32": "int", "u64": "unsigned long long",
                  "f16": "__half", "f16x2": "__half2"}


def _call(instruction: str, operands: list[str]) -> str | None:
    """The C++ that does `instruction` with `operands` (their expressions, %0 first), or None."""
    def operand(index: str) -> str:
        return f"({operands[int(index)]})"

    def value(token: str) -> str:  # an input: an operand's expression, or an immediate
        return operand(token[1:]) if token.startswith("%") else f"{token}u" if not token.startswith("-") else token

    try:
        if instruction == "trap":  # Paddle's PADDLE_ENFORCE on the device ends in asm("trap;")
            return "__trap()"
        mnemonic, _, rest = instruction.partition(" ")
        if mnemonic in _INTEGER:  # d, a, b, c[, lut]: the destination first, then the inputs
            found = re.fullmatch(",".join([r"%(\d+)"] + [_OPERAND_TOKEN] * (4 if mnemonic == "lop3.b32" else 3)), rest)
            if found is None:
                return None
            inputs = ", ".join(value(token) for token in found.groups()[1:])
            return f"{operand(found[1])} = nn_cuda_cpu::{_INTEGER[mnemonic]}({inputs})"
        if found := re.fullmatch(r"mov\.[ubs]32 %(\d+),%laneid", instruction):
            return f"{operand(found[1])} = nn_cuda_cpu::ptx_lane_id()"
        if (found := re.fullmatch(r"mov\.[ubs]32 %(\d+),%lanemask_(\w+)", instruction)) and found[2] in _SPECIAL_MASKS:
            return f"{operand(found[1])} = nn_cuda_cpu::ptx_lane_mask_{found[2]}()"
        if (found := _RED_ADD.fullmatch(instruction)) and found["type"] in _RED_ADD_TYPES:
            element = _RED_ADD_TYPES[found["type"]]
            added = operand(found["value"][1:]) if found["value"].startswith("%") else \
                f"static_cast<{element}>({found['value']})"
            return f"nn_cuda_cpu::ptx_red_add<{element}>({operand(found['address'])}, {added})"
        if found := re.fullmatch(r"mov\.b64 %(\d+),\{%(\d+),%(\d+)\}", instruction):
            return f"nn_cuda_cpu::ptx_pack64({operand(found[1])}, {operand(found[2])}, {operand(found[3])})"
        if found := re.fullmatch(r"mov\.b64 \{%(\d+),%(\d+)\},%(\d+)", instruction):
            return f"nn_cuda_cpu::ptx_unpack64({operand(found[3])}, {operand(found[1])}, {operand(found[2])})"
        if (found := re.fullmatch(r"cvt\.(\w+)\.f16\.f32 %(\d+),%(\d+)", instruction)) and found[1] in _HALF_ROUNDING:
            return (f"nn_cuda_cpu::ptx_float_to_half({operand(found[2])}, {operand(found[3])}, "
                    f"nn_cuda_cpu::Rounding::{_HALF_ROUNDING[found[1]]})")
        if found := re.fullmatch(r"cvt\.f32\.f16 %(\d+),%(\d+)", instruction):
            return f"nn_cuda_cpu::ptx_half_to_float({operand(found[1])}, {operand(found[2])})"
    except IndexError:  # an operand the statement does not have: the compiler's error, as NVRTC's
        return None
    return None


def has_asm(code: str) -> bool:
    """Whether `code` has an asm statement (its module then includes HELPERS)."""
    return _ASM.search(code) is not None


def translated(code: str) -> str:
    """`code` with each asm statement of the forms above rewritten as the runtime's call, on as many
    lines as it took; the others as they are."""
    pieces, done = [], 0
    for start in _ASM.finditer(code):
        if start.start() < done:
            continue
        end = _closing(code, start.end())
        if end is None:
            continue
        sections = _top_level_split(code[start.end():end].replace("\\\n", " "), ":")  # in a macro too
        strings = _STRING.findall(sections[0])
        if not strings or _STRING.sub("", sections[0]).strip():  # a template that is no plain string
            continue
        operands = []
        for section in sections[1:3]:
            for text in _top_level_split(section, ","):
                if text.strip():
                    found = _OPERAND.match(text)
                    if found is None:
                        operands = None
                        break
                    operands.append(found["expression"].strip())
            if operands is None:
                break
        call = None if operands is None else _call(_instruction("".join(strings)), operands)
        if call is None:
            continue
        lines = "".join(re.findall(r"\\?\n", code[start.start():end + 1]))  # continued in a macro or not
        pieces += [code[done:start.start()], f"({call})", lines]
        done = end + 1
    return "".join(pieces) + code[done:]
