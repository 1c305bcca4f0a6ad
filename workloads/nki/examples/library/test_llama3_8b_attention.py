"""The NKI Library's attention kernels at the shapes of a Llama-3-8B layer (32 query heads, 8
key/value heads, head dimension 128, bf16), run by the library's own test runners (its inputs,
references and tolerances) through scripts/nki-library:

    cases=workloads/nki/examples/library/test_llama3_8b_attention.py
    scripts/nki-library LIBRARY $cases
    scripts/nki-library --config trn3 LIBRARY --platform trn3 $cases

- context encoding (attention_cte): one layer's prefill of a 2048-token prompt, causal, batch 1:
  the 32 query heads over the 8 key/value heads on one logical core (LNC=2 on trn2 and trn3);
- token generation (attention_tkg): one decode step of a batch of 8 sequences with 2048 tokens
  of context, for one key/value head and its 4 query heads (the layer's share of a core at
  tensor parallelism 8), LNC=1.
docs/results.md gives what the model predicts for them. Written here; it imports the library's
test modules (a fetched copy of aws-neuron/nki-library on sys.path, as the driver sets it);
its name starts with test_, as pytest's modules do (scripts/nki-survey leaves it out)."""

import pytest
# (modules, not their Test classes: pytest would collect those here too)
from test.integration.nkilib.core.attention import test_attention_cte as cte
from test.integration.nkilib.core.attention.test_attention_tkg import run_attention_tkg_test
from test.utils.common_dataclasses import CompilerArgs

import nki.language as nl
from nkilib_src.nkilib.core.attention.attention_tkg_utils import AttnTKGConfig

HEADS, KV_HEADS, HEAD_DIM = 32, 8, 128
CONTEXT, DECODE_BATCH = 2048, 8


@pytest.mark.fast
def test_llama3_8b_context_encoding(test_manager, collector):
    cte.TestRangedAttentionCTEKernels().run_attention_cte_test(
        test_manager=test_manager,
        compiler_args=CompilerArgs(logical_nc_config=2),
        collector=collector,
        # (the layouts of the library's own unit cases: q and k [heads, d, seq], out transposed)
        bool_dims={cte.CAUSAL_MASK_DIM_NAME: True, cte.TP_Q_DIM_NAME: False,
                   cte.TP_K_DIM_NAME: False, cte.TP_OUT_DIM_NAME: True, cte.SINK_DIM_NAME: False},
        bs=HEADS, bs_kv=KV_HEADS, cache_softmax=False, cp_degree=None, d=HEAD_DIM,
        dtype=nl.bfloat16, seqlen_kv=CONTEXT, seqlen_kv_prior=None, prior_used_len=None,
        seqlen_q=CONTEXT, sliding_window=0, softmax_scale=1.0, cp_rank_id=None, use_cp=False)


@pytest.mark.fast
def test_llama3_8b_decode(test_manager, platform_target):
    # (the flags of the library's fast cases that run here: q and k in SBUF, k_prior [d, s])
    cfg = AttnTKGConfig(DECODE_BATCH, HEADS // KV_HEADS, 1, CONTEXT, CONTEXT, HEAD_DIM, 0,
                        tp_k_prior=False, use_pos_id=False, fuse_rope=False, qk_in_sb=True)
    run_attention_tkg_test(test_manager=test_manager,
                           compiler_args=CompilerArgs(logical_nc_config=1,
                                                      platform_target=platform_target),
                           cfg=cfg, dtype=nl.bfloat16, test_sink=False, fp8_kv=False,
                           sliding_window=0)
