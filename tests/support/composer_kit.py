"""Tiny Composer models, loaders and trainers for the tests (imports are lazy, so collection does not import
composer): the Composer tests and the quoted-error producers share them."""


def loader(samples=16, batch_size=4, shuffle=False):
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    generator = torch.Generator().manual_seed(0)
    data = TensorDataset(torch.randn(samples, 8, generator=generator),
                         torch.randint(0, 3, (samples,), generator=generator))
    return DataLoader(data, batch_size=batch_size, shuffle=shuffle)


def classifier(classes=3):
    import torch
    from composer.models import ComposerClassifier

    torch.manual_seed(0)
    layers = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, classes))
    return ComposerClassifier(module=layers, num_classes=classes)


def trainer(model=None, **settings):
    import torch
    from composer import Trainer

    model = model or classifier()
    base = dict(model=model, train_dataloader=loader(), optimizers=torch.optim.SGD(model.parameters(), lr=0.1),
                device="cpu", progress_bar=False, seed=5)  # Composer's logic is the same on every device
    base.update(settings)
    return Trainer(**base)


def weights(of):
    """A copy of a trainer's model parameters, to compare runs."""
    return [parameter.detach().clone() for parameter in of.state.model.parameters()]
