/**
 * The sleeper (docs/architecture.md#the-sleeper-and-the-helper): exits 0 on SIGTERM or SIGINT (as
 * PID 1 without a handler it would never see them) and otherwise only waits, so it runs under
 * restricted and the default seccomp profile.
 */

import { isSleeperArch, SLEEPER_ARCHITECTURES, type SleeperArch } from '../contract/names.js';
import { sleeperConfigMapName } from './naming.js';

/** Instructions as [hex bytes, assembly]; joined, they are the program's code. */
type Code = readonly (readonly [string, string])[];

/** x86-64 (Intel syntax). The kernel needs SA_RESTORER here; the handler never returns to it. */
const AMD64: Code = [
  ['4883ec20', 'sub rsp, 32                     ; struct kernel_sigaction on the stack'],
  ['488d0552000000', 'lea rax, [rip + handler]'],
  ['48890424', 'mov [rsp], rax                  ; sa_handler'],
  ['48c744240800000004', 'mov qword [rsp+8], 0x04000000 ; sa_flags = SA_RESTORER'],
  ['4889442410', 'mov [rsp+16], rax               ; sa_restorer'],
  ['48c744241800000000', 'mov qword [rsp+24], 0         ; sa_mask'],
  ['bf0f000000', 'mov edi, 15                     ; SIGTERM'],
  ['4889e6', 'mov rsi, rsp'],
  ['31d2', 'xor edx, edx'],
  ['41ba08000000', 'mov r10d, 8                     ; sizeof(sigset_t)'],
  ['b80d000000', 'mov eax, 13                     ; rt_sigaction'],
  ['0f05', 'syscall'],
  ['bf02000000', 'mov edi, 2                      ; SIGINT'],
  ['4889e6', 'mov rsi, rsp'],
  ['31d2', 'xor edx, edx'],
  ['41ba08000000', 'mov r10d, 8'],
  ['b80d000000', 'mov eax, 13                     ; rt_sigaction'],
  ['0f05', 'syscall'],
  ['b822000000', 'wait: mov eax, 34               ; pause'],
  ['0f05', 'syscall'],
  ['ebf7', 'jmp wait'],
  ['31ff', 'handler: xor edi, edi'],
  ['b8e7000000', 'mov eax, 231                    ; exit_group(0)'],
  ['0f05', 'syscall'],
];

/** AArch64 (little-endian words). It has no `pause`: `ppoll` with no descriptors and no timeout. */
const ARM64: Code = [
  ['ff8300d1', 'sub sp, sp, #32                 // struct kernel_sigaction on the stack'],
  ['21030010', 'adr x1, handler'],
  ['e10300f9', 'str x1, [sp]                    // sa_handler'],
  ['ff0700f9', 'str xzr, [sp, #8]               // sa_flags'],
  ['ff0b00f9', 'str xzr, [sp, #16]              // sa_restorer'],
  ['ff0f00f9', 'str xzr, [sp, #24]              // sa_mask'],
  ['e00180d2', 'mov x0, #15                     // SIGTERM'],
  ['e1030091', 'mov x1, sp'],
  ['020080d2', 'mov x2, #0'],
  ['030180d2', 'mov x3, #8                      // sizeof(sigset_t)'],
  ['c81080d2', 'mov x8, #134                    // rt_sigaction'],
  ['010000d4', 'svc #0'],
  ['400080d2', 'mov x0, #2                      // SIGINT'],
  ['e1030091', 'mov x1, sp'],
  ['020080d2', 'mov x2, #0'],
  ['030180d2', 'mov x3, #8'],
  ['c81080d2', 'mov x8, #134                    // rt_sigaction'],
  ['010000d4', 'svc #0'],
  ['000080d2', 'wait: mov x0, #0'],
  ['010080d2', 'mov x1, #0'],
  ['020080d2', 'mov x2, #0'],
  ['030080d2', 'mov x3, #0'],
  ['040080d2', 'mov x4, #0'],
  ['280980d2', 'mov x8, #73                     // ppoll'],
  ['010000d4', 'svc #0'],
  ['f9ffff17', 'b wait'],
  ['000080d2', 'handler: mov x0, #0'],
  ['c80b80d2', 'mov x8, #94                     // exit_group(0)'],
  ['010000d4', 'svc #0'],
];

const MACHINE: Readonly<Record<SleeperArch, { readonly machine: number; readonly code: Code }>> = {
  amd64: { machine: 62, code: AMD64 }, // EM_X86_64
  arm64: { machine: 183, code: ARM64 }, // EM_AARCH64
};

const BASE = 0x400000;
const ELF_HEADER = 64;
const PROGRAM_HEADER = 56;
const PT_LOAD = 1;
const PT_GNU_STACK = 0x6474e551;
const PF_X = 1;
const PF_W = 2;
const PF_R = 4;

/** A static ELF64 of one read-and-execute segment; PT_GNU_STACK keeps the stack non-executable. */
export function sleeperBinary(arch: SleeperArch): Uint8Array {
  const { machine, code } = MACHINE[arch];
  const text = Buffer.from(code.map(([hex]) => hex).join(''), 'hex');
  const headers = ELF_HEADER + 2 * PROGRAM_HEADER;
  const out = Buffer.alloc(headers + text.length);
  // e_ident: magic, ELFCLASS64, ELFDATA2LSB, EV_CURRENT, ELFOSABI_SYSV; the rest zero.
  out.set([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0], 0);
  out.writeUInt16LE(2, 16); // e_type: ET_EXEC
  out.writeUInt16LE(machine, 18);
  out.writeUInt32LE(1, 20); // e_version
  out.writeBigUInt64LE(BigInt(BASE + headers), 24); // e_entry: the first instruction
  out.writeBigUInt64LE(BigInt(ELF_HEADER), 32); // e_phoff
  out.writeBigUInt64LE(0n, 40); // e_shoff: no sections
  out.writeUInt32LE(0, 48); // e_flags
  out.writeUInt16LE(ELF_HEADER, 52); // e_ehsize
  out.writeUInt16LE(PROGRAM_HEADER, 54); // e_phentsize
  out.writeUInt16LE(2, 56); // e_phnum
  out.writeUInt16LE(64, 58); // e_shentsize
  out.writeUInt16LE(0, 60); // e_shnum
  out.writeUInt16LE(0, 62); // e_shstrndx
  const programHeader = (at: number, type: number, flags: number, size: number, align: number): void => {
    out.writeUInt32LE(type, at);
    out.writeUInt32LE(flags, at + 4);
    out.writeBigUInt64LE(0n, at + 8); // p_offset
    out.writeBigUInt64LE(BigInt(size === 0 ? 0 : BASE), at + 16); // p_vaddr
    out.writeBigUInt64LE(BigInt(size === 0 ? 0 : BASE), at + 24); // p_paddr
    out.writeBigUInt64LE(BigInt(size), at + 32); // p_filesz
    out.writeBigUInt64LE(BigInt(size), at + 40); // p_memsz
    out.writeBigUInt64LE(BigInt(align), at + 48); // p_align
  };
  programHeader(ELF_HEADER, PT_LOAD, PF_R | PF_X, out.length, 0x1000);
  programHeader(ELF_HEADER + PROGRAM_HEADER, PT_GNU_STACK, PF_R | PF_W, 0, 16);
  out.set(text, headers);
  return new Uint8Array(out);
}

/** Each instruction of the sleeper for `arch` with its bytes: what a reviewer reads. */
export function sleeperListing(arch: SleeperArch): string {
  return MACHINE[arch].code.map(([hex, asm]) => `${hex.padEnd(20)} ${asm}`).join('\n');
}

/** The node label the kubelet sets to its architecture (`GOARCH`), which a pool may select on. */
export const ARCH_LABEL = 'kubernetes.io/arch';

/**
 * The architecture of every node `nodeSelector` selects: its {@link ARCH_LABEL}, else the
 * invocation's `clusterArch`; undefined when there is no sleeper for it (the pool keeps the helper).
 */
export function sleeperArchOf(nodeSelector: Readonly<Record<string, string>>, clusterArch?: SleeperArch): SleeperArch | undefined {
  const pinned = nodeSelector[ARCH_LABEL];
  if (pinned !== undefined) return isSleeperArch(pinned) ? pinned : undefined;
  return clusterArch;
}

/** Each architecture's binary, base64, keyed by architecture. */
export function sleeperBinaryData(): Record<SleeperArch, string> {
  return Object.fromEntries(SLEEPER_ARCHITECTURES.map((a) => [a, Buffer.from(sleeperBinary(a)).toString('base64')])) as Record<
    SleeperArch,
    string
  >;
}

export interface SleeperConfigMap {
  readonly name: string;
  readonly binaryData: Readonly<Record<SleeperArch, string>>;
}

/** Built on first use, then shared by every namespace: the bytes, and so the name, never change. */
let configMap: SleeperConfigMap | undefined;

/** Named by a hash of its content: it is immutable. */
export function sleeperConfigMap(): SleeperConfigMap {
  if (configMap === undefined) {
    const binaryData = Object.freeze(sleeperBinaryData());
    configMap = { name: sleeperConfigMapName(JSON.stringify(binaryData)), binaryData };
  }
  return configMap;
}
