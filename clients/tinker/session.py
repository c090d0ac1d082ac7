"""A scripted SFT + RL session with the official tinker SDK (pinned in requirements.txt) against a Tinker-compatible
server: TINKER_BASE_URL, TINKER_API_KEY and LONGRUN_BASE_MODEL from the environment. Prints one JSON object with
everything it sent and got back, so that the caller can replay the same calls in process and compare."""
import json
import os
import sys

import tinker
from tinker import types


def datum(tokens, targets, **inputs):
    return types.Datum(
        model_input=types.ModelInput.from_ints(tokens),
        loss_fn_inputs={"target_tokens": targets, **inputs},
    )


def main() -> None:
    base_model = os.environ["LONGRUN_BASE_MODEL"]
    service = tinker.ServiceClient(base_url=os.environ["TINKER_BASE_URL"])
    caps = service.get_server_capabilities()
    training = service.create_lora_training_client(base_model=base_model, rank=4, seed=7)
    log = {"sdk_version": tinker.__version__, "models": [m.model_name for m in caps.supported_models], "steps": []}
    adam = types.AdamParams(learning_rate=1e-2, beta1=0.9, beta2=0.95, eps=1e-8, weight_decay=0.0, grad_clip_norm=1.0)

    # SFT: two cross-entropy steps on fixed sequences, weights on the "completion" half only.
    seqs = [[1, 4, 2, 7, 3, 5, 6], [2, 2, 8, 1, 9]]
    sft = [datum(s[:-1], s[1:], weights=[0.0] * (len(s) // 2) + [1.0] * (len(s) - 1 - len(s) // 2)) for s in seqs]
    for _ in range(2):
        fb = training.forward_backward(sft, "cross_entropy")
        opt = training.optim_step(adam)
        out = fb.result()
        opt.result()
        log["steps"].append({"loss_fn": "cross_entropy", "data": [{"tokens": s[:-1], "target_tokens": s[1:], "weights": d.loss_fn_inputs["weights"].tolist()} for s, d in zip(seqs, sft)],
                             "loss": out.metrics["loss:sum"], "logprobs": [o["logprobs"].tolist() for o in out.loss_fn_outputs]})

    # RL: sample from the trained weights, then one importance-sampling and one PPO step on the samples.
    sampler = training.save_weights_and_get_sampling_client(name="after-sft")
    prompt = [1, 4, 2]
    res = sampler.sample(types.ModelInput.from_ints(prompt), num_samples=3, sampling_params=types.SamplingParams(max_tokens=5, temperature=1.0, seed=3)).result()
    rl = []
    for k, seq in enumerate(res.sequences):
        toks = prompt + list(seq.tokens)
        n = len(toks) - 1
        sampled = [0.0] * (len(prompt) - 1) + list(seq.logprobs)
        adv = [0.0] * (len(prompt) - 1) + [[1.0, -0.5, 0.25][k]] * len(seq.tokens)
        rl.append({"tokens": toks[:-1], "target_tokens": toks[1:], "logprobs": sampled[:n], "advantages": adv[:n]})
    log["samples"] = [{"tokens": list(s.tokens), "logprobs": list(s.logprobs), "stop_reason": s.stop_reason} for s in res.sequences]
    for loss_fn, cfg in (("importance_sampling", None), ("ppo", {"clip_low_threshold": 0.9, "clip_high_threshold": 1.1})):
        data = [datum(d["tokens"], d["target_tokens"], logprobs=d["logprobs"], advantages=d["advantages"]) for d in rl]
        out = training.forward_backward(data, loss_fn, cfg).result()
        training.optim_step(adam).result()
        log["steps"].append({"loss_fn": loss_fn, "config": cfg, "data": rl, "loss": out.metrics["loss:sum"], "logprobs": [o["logprobs"].tolist() for o in out.loss_fn_outputs]})

    # After the steps: a forward pass (no gradient) reports the final weights' log-probs; save + reload round-trips.
    final = training.forward(sft, "cross_entropy").result()
    log["final"] = {"loss": final.metrics["loss:sum"], "logprobs": [o["logprobs"].tolist() for o in final.loss_fn_outputs]}
    saved = training.save_state("final").result().path
    training.load_state(saved).result()
    again = training.forward(sft, "cross_entropy").result()
    log["reloaded_loss"] = again.metrics["loss:sum"]
    log["saved_path"] = saved
    json.dump(log, sys.stdout)


if __name__ == "__main__":
    main()
