"""The x86-64 decoder (capstone + diagnose's corrections) on hand-assembled instructions.

Encodings are those gcc emits (checked against objdump); each test names the instruction.
"""

from __future__ import annotations

import pytest

from diagnose.formats import x86

LOCK_ADD_RAX = bytes.fromhex("f048830001")  # lock add qword ptr [rax], 1
MOV_EDX_RIP = bytes.fromhex("8b156d2e0000")  # mov edx, dword ptr [rip + 0x2e6d]
MOV_RDI_RAX = bytes.fromhex("488907")  # mov qword ptr [rdi], rax
LOAD_INDEX = bytes.fromhex("488b04c7")  # mov rax, qword ptr [rdi + rax*8]
LOCK_CMPXCHG = bytes.fromhex("f0480fb11a")  # lock cmpxchg qword ptr [rdx], rbx
LEA = bytes.fromhex("488d0487")  # lea rax, [rdi + rax*4]
TLS_LOAD = bytes.fromhex("64488b042528000000")  # mov rax, qword ptr fs:[0x28]
STOSQ = bytes.fromhex("48ab")  # stosq qword ptr [rdi], rax
XCHG = bytes.fromhex("488707")  # xchg qword ptr [rdi], rax
STORE_RIP = bytes.fromhex("c7051000000001000000")  # mov dword ptr [rip + 0x10], 1
GATHER = bytes.fromhex("c4e27d90040f")  # vpgatherdd ymm0, [rdi + ymm1], ymm0
ADDR32 = bytes.fromhex("678907")  # mov dword ptr [edi], eax
NOP_MEM = bytes.fromhex("0f1f00")  # nop dword ptr [rax]


def one(code: bytes, at: int = 0x1000) -> x86.Insn:
    insn = x86.decode_one(code, at)
    assert insn is not None
    return insn


def test_a_locked_add_is_a_read_modify_write_of_its_memory_operand():
    i = one(LOCK_ADD_RAX)
    assert i.size == 5 and i.text == "lock add qword ptr [rax], 1"
    (op,) = i.mem
    assert (op.base, op.index, op.disp, op.size, op.read, op.write) == (
        "ax",
        None,
        0,
        8,
        True,
        True,
    )
    assert "ax" not in i.writes and i.address_regs() == {"ax"}


def test_a_rip_relative_load_reads_and_needs_no_register():
    (op,) = one(MOV_EDX_RIP).mem
    assert op.base == "ip" and op.read and not op.write and op.disp == 0x2E6D
    assert one(MOV_EDX_RIP).address_regs() == set()
    assert "dx" in one(MOV_EDX_RIP).writes


def test_a_store():
    (op,) = one(MOV_RDI_RAX).mem
    assert op.write and not op.read and op.base == "di"


def test_a_rip_relative_store_to_a_global_has_its_address_from_the_ip_alone():
    i = one(STORE_RIP, 0x4000)
    (op,) = i.mem
    assert op.write and i.size == 10
    assert x86.effective_address(op, {}, i.end, i) == 0x4000 + 10 + 0x10


def test_cmpxchg_is_a_write_and_overwrites_rax_whatever_capstone_says():
    i = one(LOCK_CMPXCHG)
    (op,) = i.mem
    assert op.write and op.read and op.base == "dx"
    assert "ax" in i.writes


def test_xchg_with_memory_is_a_write():
    (op,) = one(XCHG).mem
    assert op.write and op.read


@pytest.mark.parametrize("code", [LEA, NOP_MEM], ids=["lea", "nop"])
def test_address_only_operands_are_no_access(code: bytes):
    assert one(code).mem == ()


def test_thread_local_and_vector_addresses_are_not_computable():
    assert not one(TLS_LOAD).mem[0].computable
    assert not one(GATHER).mem[0].computable


def test_effective_addresses():
    regs = {"ax": 0x7000, "di": 0x9000, "dx": 0x20}
    (add,) = one(LOCK_ADD_RAX).mem
    assert x86.effective_address(add, regs, 0x1005) == 0x7000
    rip = one(MOV_EDX_RIP, 0x1005)
    assert x86.effective_address(rip.mem[0], regs, rip.end) == 0x1005 + 6 + 0x2E6D
    idx = one(LOAD_INDEX)
    assert x86.effective_address(idx.mem[0], regs, idx.end) == 0x9000 + 8 * 0x7000
    a32 = one(ADDR32)
    assert a32.mem[0].addr32
    assert x86.effective_address(a32.mem[0], {"di": 0x1_0000_0040}, a32.end) == 0x40


def test_an_executed_instruction_that_overwrote_its_address_register_has_no_address():
    # GIVEN the previous instruction of a sample (it ran: the registers are its outputs)
    idx = one(LOAD_INDEX)  # mov rax, [rdi + rax*8]: rax is overwritten
    stos = one(STOSQ)  # stosq advances rdi
    regs = {"ax": 0x7000, "di": 0x9000}
    # THEN no address is claimed for it ...
    assert x86.effective_address(idx.mem[0], regs, idx.end, idx) is None
    assert x86.effective_address(stos.mem[0], regs, stos.end, stos) is None
    # ... while the same instruction at the IP (not yet run) has one
    assert x86.effective_address(stos.mem[0], regs, stos.end) == 0x9000
    # and one that keeps its base register keeps its address
    add = one(LOCK_ADD_RAX)
    assert x86.effective_address(add.mem[0], regs, add.end, add) == 0x7000


def test_a_register_perf_did_not_give_means_no_address():
    (op,) = one(LOCK_ADD_RAX).mem
    assert x86.effective_address(op, {"di": 1}, 0x1005) is None


def test_the_previous_instruction_from_the_symbol_start():
    code = MOV_RDI_RAX + LOCK_ADD_RAX + MOV_EDX_RIP
    ip = 0x1000 + len(MOV_RDI_RAX) + len(LOCK_ADD_RAX)
    assert x86.previous_from(code, 0x1000, ip) == 0x1003
    assert x86.previous_from(code, 0x1000, ip - 1) is None  # not an instruction boundary


def test_the_previous_instruction_by_resynchronising():
    # GIVEN 64+ bytes of real code of mixed lengths before the IP, start unknown
    body = (MOV_RDI_RAX + LOAD_INDEX + LEA + TLS_LOAD + XCHG) * 3 + LOCK_ADD_RAX
    code = body + MOV_EDX_RIP
    base = 0x2000
    ip = base + len(body)
    # WHEN decoding starts at several points before it THEN they agree on the lock add
    assert x86.previous_sync(code, base, ip) == ip - len(LOCK_ADD_RAX)


def test_resynchronising_finds_nothing_inside_an_instruction():
    code = TLS_LOAD * 10
    base = 0x3000
    assert x86.previous_sync(code, base, base + 9 * 8 + 3) is None


def test_needed_registers_are_the_address_registers_only():
    insns = [one(LOCK_ADD_RAX), one(MOV_EDX_RIP), one(LOAD_INDEX), None]
    assert x86.needed_regs(insns) == {"ax", "di"}
