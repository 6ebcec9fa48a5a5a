"""Break the six display equations that are wider than the book's column at 1280 px.
The browser test (tests/browser/test_book.py) finds these equations cut at the
right edge, with their number drawn over the cut. Each one is rewritten with
``aligned`` so that it fits. The script replaces a formula only where the
notebook still holds exactly the old text, so it never overwrites a formula
that was changed since; it reports what it did, and running it twice changes
nothing. Run from the repository root, then ``make book`` and
``make browser-test``::

    .venv/bin/python tools/break_wide_equations.py
"""

from __future__ import annotations

from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
# label: (notebook, the formula as it is, the formula broken over lines)
EQUATIONS: dict[str, tuple[str, str, str]] = {
    "eq-ch1-agreement": (
        "chapters/01_motivation.ipynb",
        r"""$$
\text{agreement} = \frac{\#\{(k, a, b) : |a - k| < |b - k|,\ \lVert \mathrm{PE}_a - \mathrm{PE}_k \rVert < \lVert \mathrm{PE}_b - \mathrm{PE}_k \rVert\}}{\#\{(k, a, b) : |a - k| < |b - k|\}} .
$$ (eq-ch1-agreement)""",  # noqa: E501 (the formula as the notebook holds it)
        r"""$$
\begin{aligned}
\mathcal{C} &= \{(k, a, b) : |a - k| < |b - k|\},\\
\text{agreement} &= \frac{\#\{(k, a, b) \in \mathcal{C} :
  \lVert \mathrm{PE}_a - \mathrm{PE}_k \rVert
  < \lVert \mathrm{PE}_b - \mathrm{PE}_k \rVert\}}{\#\,\mathcal{C}} .
\end{aligned}
$$ (eq-ch1-agreement)""",
    ),
    "eq-ch2-norm": (
        "chapters/02_mathematics.ipynb",
        r"""$$
\lVert \mathrm{PE}_k \rVert^2 = \sum_{i=0}^{d/2-1} \left(\sin^2 k\omega_i + \cos^2 k\omega_i\right)
= \frac{d}{2}, \qquad \lVert \mathrm{PE}_k \rVert = \sqrt{d/2} \quad \text{for every } k .
$$ (eq-ch2-norm)""",
        r"""$$
\begin{aligned}
\lVert \mathrm{PE}_k \rVert^2
&= \sum_{i=0}^{d/2-1} \left(\sin^2 k\omega_i + \cos^2 k\omega_i\right)
= \frac{d}{2},\\
\lVert \mathrm{PE}_k \rVert &= \sqrt{d/2} \quad \text{for every } k .
\end{aligned}
$$ (eq-ch2-norm)""",
    ),
    "eq-ch2-wide": (
        "chapters/02_mathematics.ipynb",
        r"""$$
D_\infty(\phi) = \frac{1}{\ln n} \int_{0}^{\ln n} \big(1 - \cos(\phi e^{-u})\big)\,du
= \frac{1}{\ln n} \int_{\phi/n}^{\phi} \frac{1 - \cos t}{t}\,dt
= \frac{\operatorname{Cin}(\phi) - \operatorname{Cin}(\phi/n)}{\ln n},
$$ (eq-ch2-wide)""",
        r"""$$
\begin{aligned}
D_\infty(\phi)
&= \frac{1}{\ln n} \int_{0}^{\ln n} \big(1 - \cos(\phi e^{-u})\big)\,du
= \frac{1}{\ln n} \int_{\phi/n}^{\phi} \frac{1 - \cos t}{t}\,dt\\
&= \frac{\operatorname{Cin}(\phi) - \operatorname{Cin}(\phi/n)}{\ln n},
\end{aligned}
$$ (eq-ch2-wide)""",
    ),
    "eq-ch4-dot": (
        "chapters/04_visualisation.ipynb",
        r"""$$
\mathrm{PE}_k \cdot \mathrm{PE}_{k+\phi}
= \sum_i \bigl(\sin k\omega_i \sin (k+\phi)\omega_i
  + \cos k\omega_i \cos (k+\phi)\omega_i\bigr)
= \sum_{i=0}^{d/2-1} \cos(\phi\,\omega_i),
$$ (eq-ch4-dot)""",
        r"""$$
\begin{aligned}
\mathrm{PE}_k \cdot \mathrm{PE}_{k+\phi}
&= \sum_i \bigl(\sin k\omega_i \sin (k+\phi)\omega_i
  + \cos k\omega_i \cos (k+\phi)\omega_i\bigr)\\
&= \sum_{i=0}^{d/2-1} \cos(\phi\,\omega_i),
\end{aligned}
$$ (eq-ch4-dot)""",
    ),
    "eq-ch5-count": (
        "chapters/05_addition_or_concatenation.ipynb",
        r"""$$
V d_x \;+\; [\text{learned}]\; L d_p \;+\; 3\,w\,d_k \;+\; d_k C \;+\; C,
\qquad w = \begin{cases} d_x & \text{added}\\ d_x + d_p & \text{concatenated,}\end{cases}
$$ (eq-ch5-count)""",
        r"""$$
\begin{aligned}
&V d_x \;+\; [\text{learned}]\; L d_p \;+\; 3\,w\,d_k \;+\; d_k C \;+\; C,\\
&w = \begin{cases} d_x & \text{added}\\ d_x + d_p & \text{concatenated,}\end{cases}
\end{aligned}
$$ (eq-ch5-count)""",
    ),
    "eq-ch5-four-terms": (
        "chapters/05_addition_or_concatenation.ipynb",
        r"""$$
\frac{z_a W_Q\,(z_b W_K)^\top}{\sqrt{d_k}}
= \frac{1}{\sqrt{d_k}}\Big(
\underbrace{x_a W_Q W_K^\top x_b^\top}_{\text{token-token}}
+ \underbrace{x_a W_Q W_K^\top p_b^\top}_{\text{token-position}}
+ \underbrace{p_a W_Q W_K^\top x_b^\top}_{\text{position-token}}
+ \underbrace{p_a W_Q W_K^\top p_b^\top}_{\text{position-position}}
\Big).
$$ (eq-ch5-four-terms)""",
        r"""$$
\begin{aligned}
\frac{z_a W_Q\,(z_b W_K)^\top}{\sqrt{d_k}}
= \frac{1}{\sqrt{d_k}}\Big(
&\underbrace{x_a W_Q W_K^\top x_b^\top}_{\text{token-token}}
+ \underbrace{x_a W_Q W_K^\top p_b^\top}_{\text{token-position}}\\
+ &\underbrace{p_a W_Q W_K^\top x_b^\top}_{\text{position-token}}
+ \underbrace{p_a W_Q W_K^\top p_b^\top}_{\text{position-position}}
\Big).
\end{aligned}
$$ (eq-ch5-four-terms)""",
    ),
}


def main() -> int:
    """Rewrite every formula that still has its old text; return 1 if one is missing."""
    missing = 0
    for label, (path, old, new) in EQUATIONS.items():
        file = ROOT / path
        nb = nbformat.read(file, as_version=4)
        cells = [c for c in nb.cells if c.cell_type == "markdown"]
        if any(new in c.source for c in cells):
            print(f"{label}: already broken over lines")
            continue
        hits = [c for c in cells if old in c.source]
        if len(hits) != 1:
            print(f"{label}: the old formula is not in {path} (changed since?): fix by hand")
            missing += 1
            continue
        hits[0].source = hits[0].source.replace(old, new)
        nbformat.write(nb, file)
        print(f"{label}: rewritten in {path}")
    return 1 if missing else 0


if __name__ == "__main__":
    raise SystemExit(main())
