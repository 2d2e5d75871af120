"""graft.torch.backend on models as their libraries build them (Hugging
Face transformers, torchvision; random weights from configs, train mode,
dropout on): eager's gradients, and saved bytes within the budget of
torch's default partition (or the least any partition saves, said so)."""
import pytest
import torch
import torchvision
import graft.torch
from conftest import recording_default_partition


class Logits(torch.nn.Module):
    """A transformers model whose forward is a scalar of its logits."""

    def __init__(self, model, argument="input_ids", labels=False):
        super().__init__()
        self.model, self.argument, self.labels = model, argument, labels

    def forward(self, x):
        kwargs = {self.argument: x}
        if self.labels:
            return self.model(**kwargs, labels=x).loss
        return self.model(**kwargs).logits.square().mean()


def bert():
    import transformers
    config = transformers.BertConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
                                     intermediate_size=128, vocab_size=256,
                                     max_position_embeddings=64)
    return Logits(transformers.BertForMaskedLM(config)), torch.randint(0, 256, (2, 32))


def t5():
    import transformers
    config = transformers.T5Config(num_layers=2, num_decoder_layers=2, d_model=64, d_ff=128,
                                   num_heads=4, d_kv=16, vocab_size=256,
                                   decoder_start_token_id=0, pad_token_id=0)
    return (Logits(transformers.T5ForConditionalGeneration(config), labels=True),
            torch.randint(0, 256, (2, 16)))


def vit():
    model = torchvision.models.VisionTransformer(
        image_size=32, patch_size=8, num_layers=2, num_heads=4, hidden_dim=64, mlp_dim=128,
        num_classes=10, dropout=0.1)
    return model, torch.randn(2, 3, 32, 32)


def mobilenet():
    return torchvision.models.mobilenet_v3_small(num_classes=10), torch.randn(2, 3, 64, 64)


def step(model, backend, x):
    compiled = model if backend is None else torch.compile(model, backend=backend)
    torch.manual_seed(1)
    out = compiled(x)
    (out if out.dim() == 0 else out.square().mean()).backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    return grads


@pytest.mark.parametrize("build", [bert, t5, vit, mobilenet])
def test_models_as_their_libraries_build_them(build):
    import transformers
    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    model, x = build()
    model.train()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    want = step(model, None, x)
    default = []
    torch._dynamo.reset()
    model.load_state_dict(state)
    step(model, recording_default_partition(default), x)
    for budget in (1.0, 0.3):
        model.load_state_dict(state)
        torch._dynamo.reset()
        before = len(graft.torch.partition_reports())
        got = step(model, graft.torch.backend(budget, inner="eager"), x)
        reports = graft.torch.partition_reports()[before:]
        assert reports and all(r["fallback"] is None for r in reports)
        assert all(torch.allclose(g, w, rtol=1e-4, atol=1e-5) for g, w in zip(got, want))
        for report, torch_default in zip(reports, default):
            assert report["default_bytes"] <= torch_default
            if report["budget_met"]:
                assert report["saved_bytes"] <= budget * torch_default * 1.05
            else:  # no partition saves that little (dropout's masks): the least
                assert report["saved_bytes"] == report["least_bytes"]
        if budget < 1.0:
            assert sum(r["recomputed_flops"] for r in reports) > 0
