"""Trim a ``python -m bench gpu-plan --keep-dump DIR`` case folder into the test data of tests/test_gpu_plan.py.

    python tests/data/bench/trim_gpu_dump.py DIR/jaxmor-quadruped-8192 tests/data/bench/gpu_plan

Keeps the thunk sequence and thunk metadata whole, and of the optimized HLO every computation that is not a
fusion's, whole, and of each fused computation its header and ROOT line; drops the instructions' metadata but
their op_name, the backend configs but the whiles', and the stack-frame tables.
"""

import re
import shutil
import sys
from pathlib import Path

src, dst = Path(sys.argv[1]), Path(sys.argv[2])
dst.mkdir(parents=True, exist_ok=True)
(target,) = src.glob("*.gpu_target_config.pbtxt")  # the GPU module's files share its prefix
prefix = target.name[: -len("gpu_target_config.pbtxt")]
for suffix in ("thunk_sequence_after_thunk_passes.txt", "thunk_metadata.txt"):
    shutil.copy(src / f"{prefix}{suffix}", dst / suffix)
fused = set(re.findall(r"calls=%([\w.\-]+)", (src / "optimized.hlo.txt").read_text()))
out, keep, tables = [], True, False
for line in (src / "optimized.hlo.txt").read_text().splitlines():
    head = re.match(r"^(?:ENTRY\s+)?%([\w.\-]+)\s+\(", line)
    if re.match(r"^[A-Z]\w*$", line):
        tables = True  # the stack-frame tables, between the module's header and its first computation
    if tables and not head:
        continue
    tables = False
    if head:
        keep = head.group(1) not in fused
        out.append(line)
        continue
    if not keep and not line.lstrip().startswith("ROOT") and line.strip() != "}":
        continue
    op = re.search(r'op_name="[^"]*"', line)
    line = re.sub(r", metadata=\{.*?\}(?=, |$)", f", metadata={{{op.group(0)}}}" if op else "", line)
    if " while(" not in line:
        line = re.sub(r", backend_config=.*$", "", line)
    out.append(line)
(dst / "optimized.hlo.txt").write_text("\n".join(out) + "\n")
