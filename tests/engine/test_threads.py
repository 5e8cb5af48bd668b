"""Thread safety: one Compiler shared by several threads gives the same masks as one thread.

Each thread runs a list of requests: compile a grammar (EBNF, JSON Schema or structural tag;
several grammars are the same in every thread, so the compiler's reuse of compiled grammars and
the shared per-state mask cache are filled concurrently), then walk it with random allowed
tokens and random rollbacks, recording every mask. The same requests are then run again one
after another on a fresh Compiler; every mask must be identical.

``bash tools/sanitize.sh tests/engine/test_threads.py`` runs this under ASan/UBSan. CPython
cannot run with a preloaded TSan runtime, so ``test_c_core_shared_compiled_under_thread_sanitizer``
checks the C core's sharing under ThreadSanitizer with a small C driver.
"""

from __future__ import annotations

import random
import threading
from typing import Any, Dict, List, Tuple

import numpy as np
import pytest

from agentgrammar import Compiler, Grammar, Matcher, Vocabulary

WORDS = [
    "<tool_call>",
    "</tool_call>",
    "<a>",
    "</a>",
    '{"',
    '":',
    '": "',
    '", "',
    '"}',
    "name",
    "arguments",
    "true",
    "false",
    "null",
    " the",
    "ing",
    "abc",
    "12",
    "é",
]


def make_vocab() -> Vocabulary:
    tokens = [bytes([b]) for b in range(256)] + [w.encode() for w in WORDS] + [b"</s>"]
    return Vocabulary(tokens, stop_token_ids=[len(tokens) - 1])


#: Grammar specs; the first ones are shared by every thread, ``thread`` marks per-thread ones.
SHARED: List[Tuple[str, Any]] = [
    ("ebnf", 'root ::= "{" pair ("," pair)* "}"\npair ::= "\\"" [a-z]+ "\\":" [0-9]+'),
    ("ebnf", 'root ::= ("ab" | "a" "c")* "d" [^<]*'),
    (
        "schema",
        {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "string", "maxLength": 5}},
            "required": ["a"],
        },
    ),
    ("schema", {"type": "array", "items": {"enum": ["x", "y", 1, None]}, "maxItems": 4}),
    (
        "tag",
        {
            "type": "triggered_tags",
            "triggers": ["<tool_call>"],
            "tags": [
                {
                    "type": "tag",
                    "begin": "<tool_call>",
                    "content": {
                        "type": "json_schema",
                        "json_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
                    },
                    "end": "</tool_call>",
                }
            ],
        },
    ),
    ("tag", {"type": "tag", "begin": "<a>", "content": {"type": "any_text"}, "end": "</a>"}),
    ("regex", r"[a-z]{1,8}(,[0-9]{1,3})*"),
]


def per_thread(thread: int, i: int) -> Tuple[str, Any]:
    """A grammar only one thread compiles (distinct content)."""
    k = (thread * 7 + i) % 3
    if k == 0:
        return ("ebnf", f'root ::= "t{thread}-{i}" [a-z]* ("," [0-9]+)?')
    if k == 1:
        return (
            "schema",
            {
                "type": "object",
                "properties": {f"k{thread}_{i}": {"type": "number"}},
                "required": [f"k{thread}_{i}"],
            },
        )
    return (
        "tag",
        {
            "type": "dispatch",
            "rules": [[f"<{thread}{i}>", {"type": "const_string", "value": "ok"}]],
            "loop": True,
        },
    )


def build(spec: Tuple[str, Any]) -> Grammar:
    kind, value = spec
    if kind == "ebnf":
        return Grammar.from_ebnf(value)
    if kind == "schema":
        return Grammar.from_json_schema(value)
    if kind == "regex":
        return Grammar.from_regex(value)
    return Grammar.from_structural_tag(value)


def plans(n_threads: int, n_requests: int, seed: int) -> List[List[Tuple[Tuple[str, Any], int]]]:
    """For each thread, its requests: (grammar spec, walk seed)."""
    rng = random.Random(seed)
    out = []
    for t in range(n_threads):
        reqs = [(SHARED[0], 1000 + t)]  # every thread starts on the same grammar at once
        for i in range(n_requests - 1):
            spec = SHARED[rng.randrange(len(SHARED))] if rng.random() < 0.75 else per_thread(t, i)
            reqs.append((spec, rng.randrange(1 << 30)))
        out.append(reqs)
    return out


def run_request(compiler: Compiler, spec: Tuple[str, Any], seed: int, steps: int) -> List[bytes]:
    """Compile, then walk with random allowed tokens and rollbacks; every mask, as bytes."""
    matcher = Matcher(compiler.compile(build(spec)))
    n = compiler.vocabulary.vocab_size
    mask = np.zeros((1, (n + 31) // 32), dtype=np.int32)
    rng = random.Random(seed)
    masks: List[bytes] = []
    for _ in range(steps):
        if matcher.is_terminated():
            break
        matcher.fill_next_token_bitmask(mask)
        masks.append(mask.tobytes())
        r = rng.random()
        if r < 0.15 and matcher.num_accepted_steps:
            matcher.rollback(rng.randint(1, matcher.num_accepted_steps))
            continue
        if r < 0.2:
            jump = matcher.find_jump_forward_string()
            if jump:
                assert matcher.accept_string(jump)
                continue
        allowed = np.flatnonzero(np.unpackbits(mask.view(np.uint8), bitorder="little")[:n])
        if len(allowed) == 0:
            break
        # Prefer non-stop tokens so the walk goes deep.
        tok = int(allowed[rng.randrange(len(allowed))])
        assert matcher.accept_token(tok), f"allowed token {tok} rejected"
    return masks


def run_threads(n_threads: int, n_requests: int, steps: int, seed: int) -> None:
    vocab = make_vocab()
    todo = plans(n_threads, n_requests, seed)
    shared = Compiler(vocab)
    results: Dict[int, List[List[bytes]]] = {}
    errors: List[BaseException] = []
    barrier = threading.Barrier(n_threads)

    def worker(t: int) -> None:
        try:
            barrier.wait()
            results[t] = [run_request(shared, spec, s, steps) for spec, s in todo[t]]
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(n_threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    if errors:
        raise errors[0]

    fresh = Compiler(vocab, background=False)  # every state classified by the mask that needs it
    for t in range(n_threads):
        for (spec, s), got in zip(todo[t], results[t]):
            want = run_request(fresh, spec, s, steps)
            assert got == want, f"thread {t}: masks differ from a single-threaded run for {spec!r}"
    assert sum(len(m) for r in results.values() for m in r) > n_threads * n_requests


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_shared_compiler_threads_match_single_thread(seed: int) -> None:
    run_threads(n_threads=4, n_requests=16, steps=100, seed=seed)


def test_compile_same_grammar_concurrently_reuses_one_compiled() -> None:
    """Threads compiling one grammar at once all get working results; later calls reuse one."""
    compiler = Compiler(make_vocab())
    spec = SHARED[2]
    got: List[Any] = []
    barrier = threading.Barrier(6)

    def worker() -> None:
        barrier.wait()
        got.append(compiler.compile(build(spec)))

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(got) == 6
    assert compiler.compile(build(spec)) in got
    masks = {Matcher(c).allowed_token_ids().__repr__() for c in got}
    assert len(masks) == 1


@pytest.mark.slow
def test_shared_compiler_threads_match_single_thread_big() -> None:
    for seed in range(3, 8):
        run_threads(n_threads=8, n_requests=60, steps=300, seed=seed)


# --------------------------------------------------------------------------- ThreadSanitizer

# CPython cannot run with a preloaded TSan runtime (it crashes at start-up), so the C core is
# checked under TSan by a small C driver instead: several pthreads share one ag_compiled per
# grammar (and so its lazily filled mask cache, which a pool's worker fills in the background
# too), walk random allowed tokens with rollbacks and hash every mask; a single-threaded rerun
# on fresh compiled grammars must give the same hashes.
TSAN_DRIVER = r"""
#include "agentgrammar.h"
#include "agentgrammar_testing.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) { perror(path); exit(2); }
  fseek(f, 0, SEEK_END); *n = (size_t)ftell(f); fseek(f, 0, SEEK_SET);
  unsigned char *buf = malloc(*n ? *n : 1);
  if (fread(buf, 1, *n, f) != *n) { perror(path); exit(2); }
  fclose(f);
  return buf;
}

enum { MAX_G = 16 };
static int n_grammars, n_threads, n_requests, n_steps;
static ag_vocab *vocab;
static int32_t *gwords[MAX_G];
static size_t gn[MAX_G];

typedef struct { ag_compiled **compiled; int thread; uint64_t *hashes; } job;

static uint64_t rnd(uint64_t *s) { *s = *s * 6364136223846793005ULL + 1442695040888963407ULL; return *s >> 33; }

static void check(ag_status st, ag_error *err, const char *what) {
  if (st != AG_OK) { fprintf(stderr, "%s failed: %s\n", what, err->message); exit(3); }
}

static uint64_t request(ag_compiled *c, uint64_t seed) {
  ag_error err; ag_matcher *m; int flag;
  check(ag_matcher_new(c, NULL, -1, 0, &m, &err), &err, "matcher_new");
  int32_t size = ag_vocab_mask_size(vocab);
  size_t words = ((size_t)size + 31) / 32;
  uint32_t *mask = calloc(words, 4);
  uint64_t h = 1469598103934665603ULL, s = seed;
  for (int step = 0; step < n_steps && !ag_matcher_is_terminated(m); step++) {
    check(ag_matcher_fill_mask(m, mask, words, &flag, &err), &err, "fill_mask");
    for (size_t w = 0; w < words; w++) h = (h ^ mask[w]) * 1099511628211ULL;
    if (rnd(&s) % 8 == 0 && ag_matcher_num_steps(m) > 0) {
      check(ag_matcher_rollback(m, 1 + (int32_t)(rnd(&s) % (uint64_t)ag_matcher_num_steps(m)), &err), &err, "rollback");
      continue;
    }
    int32_t allowed = 0;
    for (int32_t t = 0; t < size; t++) allowed += (mask[t / 32] >> (t % 32)) & 1;
    if (!allowed) break;
    int32_t pick = (int32_t)(rnd(&s) % (uint64_t)allowed), tok = -1;
    for (int32_t t = 0; t < size && tok < 0; t++)
      if (((mask[t / 32] >> (t % 32)) & 1) && pick-- == 0) tok = t;
    check(ag_matcher_accept_token(m, tok, &flag, &err), &err, "accept_token");
    if (!flag) { fprintf(stderr, "allowed token %d rejected\n", tok); exit(4); }
  }
  free(mask);
  ag_matcher_free(m);
  return h;
}

static void *run(void *arg) {
  job *j = arg;
  for (int r = 0; r < n_requests; r++) {
    int g = (j->thread + r) % n_grammars;
    j->hashes[r] = request(j->compiled[g], (uint64_t)(j->thread * 1000 + r));
  }
  return NULL;
}

/* Every grammar's matchers walk in lock step, their masks filled together on a pool: the
 * batch path under TSan, fresh caches filled by the pool's threads at once. */
static uint64_t batch_walk(ag_compiled **compiled, int32_t pool_threads) {
  enum { COPIES = 3 };
  ag_error err; ag_pool *pool; int flag;
  check(ag_pool_new(pool_threads, &pool, &err), &err, "pool_new");
  int32_t n = n_grammars * COPIES, size = ag_vocab_mask_size(vocab);
  size_t words = ((size_t)size + 31) / 32;
  ag_matcher *all[MAX_G * COPIES], *live[MAX_G * COPIES];
  int32_t rows[MAX_G * COPIES], results[MAX_G * COPIES];
  uint64_t seeds[MAX_G * COPIES], h = 1469598103934665603ULL;
  uint32_t *masks = calloc((size_t)n * words, 4);
  for (int32_t i = 0; i < n; i++) {
    check(ag_matcher_new(compiled[i % n_grammars], NULL, -1, 0, &all[i], &err), &err, "matcher_new");
    seeds[i] = 77 + (uint64_t)i;
  }
  for (int step = 0; step < n_steps; step++) {
    int32_t k = 0;
    for (int32_t i = 0; i < n; i++)
      if (!ag_matcher_is_terminated(all[i])) { live[k] = all[i]; rows[k] = i; k++; }
    if (k == 0) break;
    check(ag_batch_fill_masks(pool, live, rows, k, masks, (size_t)n, words, results, &err), &err, "batch_fill");
    for (int32_t j = 0; j < k; j++) {
      int32_t i = rows[j];
      uint32_t *mask = masks + (size_t)i * words;
      for (size_t w = 0; w < words; w++) h = (h ^ mask[w]) * 1099511628211ULL;
      if (rnd(&seeds[i]) % 8 == 0 && ag_matcher_num_steps(all[i]) > 0) {
        check(ag_matcher_rollback(all[i], 1, &err), &err, "rollback");
        continue;
      }
      int32_t tok = -1;
      for (int32_t t = (int32_t)(rnd(&seeds[i]) % (uint64_t)size), tries = 0; tries < size && tok < 0; tries++, t = (t + 1) % size)
        if ((mask[t / 32] >> (t % 32)) & 1) tok = t;
      if (tok < 0) continue;
      check(ag_matcher_accept_token(all[i], tok, &flag, &err), &err, "accept_token");
    }
  }
  for (int32_t i = 0; i < n; i++) ag_matcher_free(all[i]);
  free(masks);
  ag_pool_free(pool);
  return h;
}

/* Threads loading key-trie grammars with one build cache: the first loads fill it while the
 * others copy from it; every load has the automata of a load without the cache. */
static int32_t *kwords[MAX_G];
static size_t kn[MAX_G];
static int n_keys;
static ag_build_cache *kcache;

static void *load_keys(void *arg) {
  uint64_t *bad = arg;
  ag_error err;
  for (int round = 0; round < 4; round++)
    for (int g = 0; g < n_keys; g++) {
      ag_grammar *plain, *cached;
      check(ag_grammar_load(kwords[g], kn[g], &plain, &err), &err, "grammar_load");
      check(ag_grammar_load_cached(kwords[g], kn[g], kcache, &cached, &err), &err, "grammar_load_cached");
      *bad += ag_grammar_testing_shape(plain) != ag_grammar_testing_shape(cached);
      ag_grammar_free(plain);
      ag_grammar_free(cached);
    }
  return NULL;
}

static int cached_loads(const char *dir, int threads) {
  char path[4096];
  ag_error err;
  for (n_keys = 0; n_keys < MAX_G; n_keys++) {
    snprintf(path, sizeof path, "%s/keys%d", dir, n_keys);
    FILE *f = fopen(path, "rb");
    if (!f) break;
    fclose(f);
    kwords[n_keys] = (int32_t *)slurp(path, &kn[n_keys]);
    kn[n_keys] /= 4;
  }
  check(ag_build_cache_new(&kcache, &err), &err, "build_cache_new");
  pthread_t th[64];
  uint64_t bad[64] = {0};
  for (int t = 0; t < threads; t++) pthread_create(&th[t], NULL, load_keys, &bad[t]);
  int total = 0;
  for (int t = 0; t < threads; t++) {
    pthread_join(th[t], NULL);
    total += (int)bad[t];
  }
  if (ag_build_cache_testing_size(kcache) < 1) total++;
  ag_build_cache_free(kcache);
  for (int g = 0; g < n_keys; g++) free(kwords[g]);
  return total;
}

static void compile_all(ag_compiled **out) {
  ag_error err;
  for (int g = 0; g < n_grammars; g++) {
    ag_grammar *gr;
    check(ag_grammar_load(gwords[g], gn[g], &gr, &err), &err, "grammar_load");
    check(ag_compiled_new(gr, vocab, &out[g], &err), &err, "compiled_new");
    ag_grammar_free(gr);
  }
}

int main(int argc, char **argv) {
  /* dir n_grammars n_threads n_requests n_steps */
  if (argc != 6) return 2;
  const char *dir = argv[1];
  n_grammars = atoi(argv[2]); n_threads = atoi(argv[3]); n_requests = atoi(argv[4]); n_steps = atoi(argv[5]);
  char path[4096]; size_t nb, no, nk;
  snprintf(path, sizeof path, "%s/blob", dir); unsigned char *blob = slurp(path, &nb);
  snprintf(path, sizeof path, "%s/offsets", dir); uint32_t *offsets = (uint32_t *)slurp(path, &no);
  snprintf(path, sizeof path, "%s/kinds", dir); unsigned char *kinds = slurp(path, &nk);
  ag_error err;
  check(ag_vocab_new(blob, offsets, kinds, (int32_t)nk, (int32_t)nk, &vocab, &err), &err, "vocab_new");
  for (int g = 0; g < n_grammars; g++) {
    size_t n;
    snprintf(path, sizeof path, "%s/grammar%d", dir, g);
    gwords[g] = (int32_t *)slurp(path, &n);
    gn[g] = n / 4;
  }
  ag_compiled *shared[MAX_G], *fresh[MAX_G], *dropped[MAX_G];
  /* Background classification on a pool's worker while the threads walk, and grammars
   * freed with their background work queued or in a slice: it stops, nothing leaks. */
  ag_pool *bg;
  check(ag_pool_new(2, &bg, &err), &err, "pool_new");
  compile_all(shared);
  compile_all(dropped);
  for (int g = 0; g < n_grammars; g++) {
    check(ag_compiled_classify_background(dropped[g], bg, 1 << 20, 60.0, &err), &err, "background");
    check(ag_compiled_classify_background(shared[g], bg, 1 << 20, 60.0, &err), &err, "background");
  }
  for (int g = 0; g < n_grammars; g++) ag_compiled_free(dropped[g]);
  pthread_t th[64]; job jobs[64];
  for (int t = 0; t < n_threads; t++) {
    jobs[t] = (job){shared, t, calloc((size_t)n_requests, sizeof(uint64_t))};
    pthread_create(&th[t], NULL, run, &jobs[t]);
  }
  for (int t = 0; t < n_threads; t++) pthread_join(th[t], NULL);
  compile_all(fresh);
  int bad = 0;
  for (int t = 0; t < n_threads; t++) {
    job one = {fresh, t, calloc((size_t)n_requests, sizeof(uint64_t))};
    run(&one);
    for (int r = 0; r < n_requests; r++) bad += one.hashes[r] != jobs[t].hashes[r];
    free(one.hashes);
  }
  /* Each grammar deferred to itself (ag_compiled_defer): the threads' first steps build the
   * whole at once, one of them building while the others wait, and its background work runs
   * on the pool; their walks are those of the grammars compiled at once. */
  ag_compiled *late[MAX_G];
  compile_all(late);
  for (int g = 0; g < n_grammars; g++) {
    int deferred;
    check(ag_compiled_defer(late[g], gwords[g], gn[g], NULL, NULL, 0, bg, 1 << 20, 60.0, &deferred, &err),
          &err, "defer");
  }
  job later[64];
  for (int t = 0; t < n_threads; t++) {
    later[t] = (job){late, t, calloc((size_t)n_requests, sizeof(uint64_t))};
    pthread_create(&th[t], NULL, run, &later[t]);
  }
  for (int t = 0; t < n_threads; t++) pthread_join(th[t], NULL);
  for (int t = 0; t < n_threads; t++) {
    for (int r = 0; r < n_requests; r++) bad += later[t].hashes[r] != jobs[t].hashes[r];
    free(later[t].hashes); free(jobs[t].hashes);
  }
  for (int g = 0; g < n_grammars; g++) bad += ag_compiled_testing_deferred(late[g]) == 1; /* every one built */
  for (int g = 0; g < n_grammars; g++) ag_compiled_free(late[g]);
  ag_compiled *batched[MAX_G], *serial[MAX_G];
  compile_all(batched);
  compile_all(serial);
  uint64_t pooled = batch_walk(batched, 4), alone = batch_walk(serial, 1);
  bad += pooled != alone;
  for (int g = 0; g < n_grammars; g++) { ag_compiled_free(batched[g]); ag_compiled_free(serial[g]); }
  for (int g = 0; g < n_grammars; g++) { ag_compiled_free(shared[g]); ag_compiled_free(fresh[g]); free(gwords[g]); }
  ag_pool_free(bg);
  bad += cached_loads(dir, n_threads);
  ag_vocab_free(vocab); free(blob); free(offsets); free(kinds);
  printf("requests %d, mismatches %d\n", n_threads * n_requests, bad);
  return bad ? 1 : 0;
}
"""


def run_tsan_driver(tmp_path: Any, threads: int, requests: int, steps: int) -> None:
    import shutil
    import subprocess
    from pathlib import Path

    cc = shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("no C compiler")
    root = Path(__file__).resolve().parents[2]
    vocab = make_vocab()
    blob, offsets, kinds, _, _ = vocab._native_args()
    (tmp_path / "blob").write_bytes(blob)
    (tmp_path / "offsets").write_bytes(offsets.tobytes())
    (tmp_path / "kinds").write_bytes(kinds)
    # Grammars made of linked parts need ag_grammar_link; the driver loads whole grammars only.
    specs = [
        s
        for s in [*SHARED, per_thread(0, 0), per_thread(1, 1), per_thread(0, 1)]
        if not getattr(build(s), "parts", None)
    ]
    for g, spec in enumerate(specs):
        (tmp_path / f"grammar{g}").write_bytes(build(spec).to_bytes())
    # Objects whose other keys hold integers: key tries in grammars without parts.
    for g, names in enumerate([("id",), ("id", "idx", "name"), ("a", "b", "ab"), ("user_id", "group_id")]):
        schema = {
            "type": "object",
            "properties": {n: {"type": "string"} for n in names},
            "additionalProperties": {"type": "integer"},
        }
        keyed = Grammar.from_json_schema(schema)
        assert not keyed.parts
        (tmp_path / f"keys{g}").write_bytes(keyed.to_bytes())
    (tmp_path / "driver.c").write_text(TSAN_DRIVER)
    exe = tmp_path / "driver"
    sources = [str(p) for p in sorted((root / "csrc").glob("*.c"))]
    cmd = [cc, "-std=c11", "-g", "-O1", "-fsanitize=thread", "-pthread", f"-I{root / 'csrc'}"]
    built = subprocess.run(
        [*cmd, *sources, str(tmp_path / "driver.c"), "-o", str(exe)], capture_output=True, text=True
    )
    if built.returncode != 0:
        pytest.skip(f"no ThreadSanitizer build: {built.stderr[-300:]}")
    env = {"TSAN_OPTIONS": "halt_on_error=1:exitcode=66", "PATH": "/usr/bin:/bin"}
    run = subprocess.run(
        [str(exe), str(tmp_path), str(len(specs)), str(threads), str(requests), str(steps)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    if "unexpected memory mapping" in run.stderr or "FATAL: ThreadSanitizer" in run.stderr:
        pytest.skip(f"ThreadSanitizer cannot run here: {run.stderr[-300:]}")
    assert run.returncode == 0, f"status {run.returncode}\n{run.stdout}\n{run.stderr[-4000:]}"
    assert "mismatches 0" in run.stdout


def test_c_core_shared_compiled_under_thread_sanitizer(tmp_path: Any) -> None:
    run_tsan_driver(tmp_path, threads=4, requests=12, steps=40)


@pytest.mark.slow
def test_c_core_shared_compiled_under_thread_sanitizer_big(tmp_path: Any) -> None:
    run_tsan_driver(tmp_path, threads=8, requests=60, steps=150)
