/**
 * Regenerates `src/rl/tinker/proto/tinker_public_pb.ts`, the protobuf schema of the Tinker wire format, from the
 * official Python SDK's published wheel: `tinker/proto/tinker_public_pb2.py` in the wheel carries the serialized
 * `FileDescriptorProto` of `tinker_public.proto` (the argument of `AddSerializedFile`). This script reads that bytes
 * literal with Python's `ast` (nothing in the wheel is executed), checks the wheel's sha256, and runs protoc-gen-es
 * (`@bufbuild/protoc-gen-es`, a dev dependency) on it with `target=ts,import_extension=ts`. It also writes
 * `tinker_public.binpb` (the descriptor itself) and `PROVENANCE.md` next to the generated code.
 *
 * Usage (bumping the SDK: change the version and sha256 below, then run):
 *   pip download --no-deps tinker==0.38.0 -d DIR
 *   node --import tsx scripts/tinker-proto-gen.ts --wheel DIR/tinker-0.38.0-py3-none-any.whl
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { CodeGeneratorRequestSchema, CodeGeneratorResponseSchema, FileDescriptorProtoSchema } from '@bufbuild/protobuf/wkt';

/** The SDK release the schema comes from, and its wheel's sha256 as PyPI publishes it. */
export const TINKER_PROTO_SDK = { name: 'tinker', version: '0.38.0', wheel: 'tinker-0.38.0-py3-none-any.whl', sha256: '7685b29f467a717972fc4104cd944a25226ed357f57595adbe0abec44bada5d0' };

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const OUT = join(ROOT, 'src/rl/tinker/proto');

const EXTRACT = `
import ast, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    src = z.read("tinker/proto/tinker_public_pb2.py").decode("utf-8")
found = [n.args[0].value for n in ast.walk(ast.parse(src))
         if isinstance(n, ast.Call) and getattr(n.func, "attr", None) == "AddSerializedFile"
         and n.args and isinstance(n.args[0], ast.Constant) and isinstance(n.args[0].value, bytes)]
if len(found) != 1:
    sys.exit(f"expected one AddSerializedFile(b'...') call in tinker_public_pb2.py, found {len(found)}")
sys.stdout.buffer.write(found[0])
`;

function main(): void {
  const i = process.argv.indexOf('--wheel');
  const wheel = i >= 0 ? process.argv[i + 1] : undefined;
  if (!wheel) throw new Error(`usage: scripts/tinker-proto-gen.ts --wheel PATH/${TINKER_PROTO_SDK.wheel} (pip download --no-deps tinker==${TINKER_PROTO_SDK.version})`);
  if (basename(wheel) !== TINKER_PROTO_SDK.wheel) throw new Error(`${wheel}: expected ${TINKER_PROTO_SDK.wheel} (bump TINKER_PROTO_SDK in this script for another release)`);
  const sha = createHash('sha256').update(readFileSync(wheel)).digest('hex');
  if (sha !== TINKER_PROTO_SDK.sha256) throw new Error(`${wheel}: sha256 ${sha}, expected ${TINKER_PROTO_SDK.sha256} (the wheel PyPI publishes)`);
  const py = spawnSync(process.env.PYTHON ?? 'python3', ['-c', EXTRACT, wheel], { maxBuffer: 64 * 1024 * 1024 });
  if (py.status !== 0) throw new Error(`extracting the descriptor failed: ${py.stderr?.toString() ?? py.error?.message}`);
  const descriptor = new Uint8Array(py.stdout);
  const file = fromBinary(FileDescriptorProtoSchema, descriptor);
  if (file.name !== 'tinker_public.proto') throw new Error(`the descriptor is for ${file.name}, expected tinker_public.proto`);
  if (file.dependency.length > 0) throw new Error(`tinker_public.proto now imports ${file.dependency.join(', ')}; this script handles a self-contained file only`);
  const request = create(CodeGeneratorRequestSchema, { fileToGenerate: [file.name], parameter: 'target=ts,import_extension=ts', protoFile: [file], sourceFileDescriptors: [file] });
  const plugin = spawnSync(join(ROOT, 'node_modules/.bin/protoc-gen-es'), [], { input: toBinary(CodeGeneratorRequestSchema, request), maxBuffer: 64 * 1024 * 1024 });
  if (plugin.status !== 0) throw new Error(`protoc-gen-es failed: ${plugin.stderr.toString()}`);
  const response = fromBinary(CodeGeneratorResponseSchema, new Uint8Array(plugin.stdout));
  if (response.error) throw new Error(`protoc-gen-es: ${response.error}`);
  for (const f of response.file) {
    writeFileSync(join(OUT, f.name), f.content);
    console.log(`wrote src/rl/tinker/proto/${f.name}`);
  }
  writeFileSync(join(OUT, 'tinker_public.binpb'), descriptor);
  const descSha = createHash('sha256').update(descriptor).digest('hex');
  writeFileSync(join(OUT, 'PROVENANCE.md'), `# Provenance of the Tinker protobuf schema

- Source: the official Python SDK \`${TINKER_PROTO_SDK.name}==${TINKER_PROTO_SDK.version}\` on PyPI
  (https://pypi.org/project/tinker/${TINKER_PROTO_SDK.version}/), wheel \`${TINKER_PROTO_SDK.wheel}\`,
  sha256 \`${TINKER_PROTO_SDK.sha256}\`.
- File: \`tinker/proto/tinker_public_pb2.py\` in the wheel, the serialized \`FileDescriptorProto\` of
  \`${file.name}\` (package \`${file.package}\`, ${file.messageType.length} messages, ${file.enumType.length} enums) passed to
  \`AddSerializedFile\`; read with Python's \`ast\`, not executed.
- \`tinker_public.binpb\`: that descriptor, ${descriptor.length} bytes, sha256 \`${descSha}\`.
- \`tinker_public_pb.ts\`: generated from it by \`@bufbuild/protoc-gen-es\` (\`target=ts,import_extension=ts\`).
- Regenerate: \`pip download --no-deps ${TINKER_PROTO_SDK.name}==${TINKER_PROTO_SDK.version} -d DIR\`, then
  \`node --import tsx scripts/tinker-proto-gen.ts --wheel DIR/${TINKER_PROTO_SDK.wheel}\`. For a newer SDK, change
  \`TINKER_PROTO_SDK\` (version, wheel name, sha256) in \`scripts/tinker-proto-gen.ts\` first.
`);
  console.log(`descriptor ${descriptor.length} bytes, sha256 ${descSha}`);
}

main();
