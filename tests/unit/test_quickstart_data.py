"""The quickstart's model module (``notebooks/cancer.py``) reads scikit-learn's bundled
breast-cancer data without importing scikit-learn, and gets the very data
``load_breast_cancer`` gives."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def test_the_data_is_scikit_learns_breast_cancer_standardised_shuffled_and_split():
    sys.path.insert(0, str(NOTEBOOKS))
    try:
        import cancer
    finally:
        sys.path.remove(str(NOTEBOOKS))
    from sklearn.datasets import load_breast_cancer

    x, y = load_breast_cancer(return_X_y=True)
    x = ((x - x.mean(0)) / x.std(0)).astype("float32")
    order = np.random.RandomState(0).permutation(len(x))
    x_train, y_train, x_test, y_test = cancer.load_data()
    assert np.array_equal(np.concatenate([x_train, x_test]), x[order])
    assert np.array_equal(np.concatenate([y_train, y_test]), y[order].astype("int32"))
    assert len(x_train) == cancer.N_TRAIN and y_train.dtype == np.int32


def test_loading_the_data_imports_no_scikit_learn(fresh_python):
    code = (
        f"import sys; sys.path.insert(0, {str(NOTEBOOKS)!r}); import cancer\n"
        "cancer.load_data()\n"
        "assert 'sklearn' not in sys.modules\n"
    )
    fresh_python(code)
