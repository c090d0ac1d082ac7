"""A scripted SFT + RL session with the official tinker SDK against a Tinker-compatible server: TINKER_BASE_URL,
TINKER_API_KEY and LONGRUN_BASE_MODEL from the environment. Runs with every SDK release the tests pin
(requirements.txt: 0.24.1, the JSON protocol; requirements-0.38.txt: 0.38.0, protobuf) and uses every public call a
training loop needs: capabilities, a LoRA training client, forward_backward with each built-in loss, forward,
optim_step, sampling clients (sample, compute_logprobs), save_weights_for_sampler, save_state, load_state with and
without the optimizer, training clients created from a saved state, futures (result() and awaited). Prints one JSON
object with everything it sent and got back, so that the caller can replay the same calls in process and compare."""
import asyncio
import json
import os
import sys
import warnings

import tinker
from tinker import types

# load_state* are deprecated in newer SDKs (create_training_client_from_state* replace them); both are exercised here.
warnings.simplefilter("ignore", FutureWarning)
warnings.simplefilter("ignore", DeprecationWarning)

ADAM = types.AdamParams(learning_rate=1e-2, beta1=0.9, beta2=0.95, eps=1e-8, weight_decay=0.0, grad_clip_norm=1.0)
SEQS = [[1, 4, 2, 7, 3, 5, 6], [2, 2, 8, 1, 9]]


def datum(tokens, targets, **inputs):
    return types.Datum(
        model_input=types.ModelInput.from_ints(tokens),
        loss_fn_inputs={"target_tokens": targets, **inputs},
    )


def sft_data():
    return [datum(s[:-1], s[1:], weights=[0.0] * (len(s) // 2) + [1.0] * (len(s) - 1 - len(s) // 2)) for s in SEQS]


def sft_log(out):
    return {"loss_fn": "cross_entropy", "data": [{"tokens": s[:-1], "target_tokens": s[1:], "weights": d.loss_fn_inputs["weights"].tolist()} for s, d in zip(SEQS, sft_data())],
            "loss": out.metrics["loss:sum"], "logprobs": [o["logprobs"].tolist() for o in out.loss_fn_outputs]}


def forward_loss(training) -> float:
    return training.forward(sft_data(), "cross_entropy").result().metrics["loss:sum"]


def sft_step_then_loss(training) -> float:
    """One SFT step (forward_backward + optim_step, both submitted before waiting), then the forward loss."""
    fb = training.forward_backward(sft_data(), "cross_entropy")
    opt = training.optim_step(ADAM)
    fb.result()
    opt.result()
    return forward_loss(training)


def main() -> None:
    base_model = os.environ["LONGRUN_BASE_MODEL"]
    service = tinker.ServiceClient(base_url=os.environ["TINKER_BASE_URL"])
    caps = service.get_server_capabilities()
    training = service.create_lora_training_client(base_model=base_model, rank=4, seed=7)
    log = {"sdk_version": tinker.__version__, "models": [m.model_name for m in caps.supported_models], "steps": []}

    # SFT: two cross-entropy steps on fixed sequences, weights on the "completion" half only. The optimizer step is
    # submitted before the forward_backward's result is read (futures run in submission order on the server).
    for _ in range(2):
        fb = training.forward_backward(sft_data(), "cross_entropy")
        opt = training.optim_step(ADAM)
        out = fb.result()
        opt.result()
        log["steps"].append(sft_log(out))

    # RL: sample from the trained weights, then one step of each policy-gradient loss on the samples.
    sampler = training.save_weights_and_get_sampling_client(name="after-sft")
    prompt = [1, 4, 2]
    res = sampler.sample(types.ModelInput.from_ints(prompt), num_samples=3, sampling_params=types.SamplingParams(max_tokens=5, temperature=1.0, seed=3)).result()
    log["samples"] = [{"tokens": list(s.tokens), "logprobs": list(s.logprobs), "stop_reason": s.stop_reason} for s in res.sequences]
    # compute_logprobs: log p(token i | tokens < i) of a whole sequence under the sampler's weights (None for the first).
    scored = SEQS[0]
    log["prompt_logprobs"] = {"tokens": scored, "logprobs": sampler.compute_logprobs(types.ModelInput.from_ints(scored)).result()}
    rl = []
    for k, seq in enumerate(res.sequences):
        toks = prompt + list(seq.tokens)
        n = len(toks) - 1
        sampled = [0.0] * (len(prompt) - 1) + list(seq.logprobs)
        adv = [0.0] * (len(prompt) - 1) + [[1.0, -0.5, 0.25][k]] * len(seq.tokens)
        rl.append({"tokens": toks[:-1], "target_tokens": toks[1:], "logprobs": sampled[:n], "advantages": adv[:n]})
    clip = {"clip_low_threshold": 0.9, "clip_high_threshold": 1.1}
    for loss_fn, cfg in (("importance_sampling", None), ("ppo", clip), ("cispo", clip), ("dro", {"beta": 0.5})):
        data = [datum(d["tokens"], d["target_tokens"], logprobs=d["logprobs"], advantages=d["advantages"]) for d in rl]
        out = training.forward_backward(data, loss_fn, cfg).result()
        training.optim_step(ADAM).result()
        log["steps"].append({"loss_fn": loss_fn, "config": cfg, "data": rl, "loss": out.metrics["loss:sum"], "logprobs": [o["logprobs"].tolist() for o in out.loss_fn_outputs]})

    # A forward pass (no gradient), awaited as a coroutine rather than with result().
    final = asyncio.run(training.forward(sft_data(), "cross_entropy").result_async())
    log["final"] = {"loss": final.metrics["loss:sum"], "logprobs": [o["logprobs"].tolist() for o in final.loss_fn_outputs]}

    # Weights for a sampler by name, and a sampling client made from that path.
    path = training.save_weights_for_sampler(name="final-sampler").result().path
    named = service.create_sampling_client(model_path=path)
    again = named.sample(types.ModelInput.from_ints(prompt), num_samples=1, sampling_params=types.SamplingParams(max_tokens=4, seed=11)).result()
    log["named_sampler"] = {"path": path, "tokens": list(again.sequences[0].tokens)}

    # Checkpoints: save (weights + optimizer), one more step, then back to the checkpoint three ways.
    saved = training.save_state("final").result().path
    log["saved_path"] = saved
    log["after_extra_step"] = sft_step_then_loss(training)
    training.load_state_with_optimizer(saved).result()
    log["reloaded_with_optimizer_loss"] = forward_loss(training)
    log["step_after_optimizer_load"] = sft_step_then_loss(training)
    training.load_state(saved).result()
    log["reloaded_loss"] = forward_loss(training)
    log["step_after_weights_load"] = sft_step_then_loss(training)
    fresh = service.create_training_client_from_state(saved)
    log["from_state_loss"] = forward_loss(fresh)
    log["from_state_step"] = sft_step_then_loss(fresh)
    resumed = service.create_training_client_from_state_with_optimizer(saved)
    log["from_state_with_optimizer_step"] = sft_step_then_loss(resumed)
    json.dump(log, sys.stdout)


if __name__ == "__main__":
    main()
