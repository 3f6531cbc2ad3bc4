#!/usr/bin/env python3
"""Summary of the step-time table of docs/validation.md (or of validation_table.sh output): per
set of runs, mean |error|, max |error| and signed mean. Usage: python3 tests/perf/validation_summary.py FILE"""
import sys
text=open(sys.argv[1]).read()
text=text[text.index('| run | devices |'):]
lines=text.split('\n\n')[0].splitlines()[2:]
err={}
for l in lines:
    r=l.split('|'); err[r[1].strip()]=float(r[6].strip().split(' ')[0])
def st(names):
    v=[err[n] for n in names]; return len(v), sum(map(abs,v))/len(v), max(map(abs,v)), sum(v)/len(v)
ten=['bloom-176b']+[n for n in err if n.startswith('megatron-gpt')]
k=[n for n in err if n.startswith('korthikanti')]
sc=[n for n in err if n.startswith('megatron-sc21')]
sm=['tinyllama-1.1b-a100-40gb','torchtitan-llama3-70b-a100','torchtitan-llama3-8b-a100','nemo-llama2-7b-h100-fp8']
ga=[n for n in err if n.startswith('gaudi2')]
tpu=[n for n in err if n.startswith('maxtext')]
v100=[n for n in err if n.startswith('megatron-v1')]
nemo=[n for n in err if n.startswith('nemo-2')]  # NeMo / Megatron-Bridge performance tables (nemo-<release>-…)
# Added 2026-12-06 (docs/research-more-runs.md): torchtitan's Llama 2 13B (A100) and Llama 3.1 8B Float8 (H200) tables,
# LLM Foundry's MPT table (A100 80GB).
more=[n for n in err if n.startswith(('torchtitan-llama2-13b', 'torchtitan-llama31-8b-h200', 'llmfoundry-'))]
for name,s in [('ten',ten),('korth',k),('sc21',sc),('small',sm),('gaudi2',ga),('tpu',tpu),('v100',v100),('nemo',nemo),('more',more),('all',list(err))]:
    if not s: continue
    print(name, "%d mean %.1f max %.1f signed %+.1f"%st(s))
