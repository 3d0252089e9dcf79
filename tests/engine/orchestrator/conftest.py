"""A small indexed shop repository with secrets lying around, for orchestrator tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from engine.config import Settings, load_settings
from engine.index.indexer import index_repository
from engine.repo.layout import RepoLayout

CART = '''"""Shopping cart."""
from shop.pricing import apply_discount, tax_for


class Cart:
    """A cart of items."""

    def __init__(self):
        self.items = []

    def add_item(self, name, price, qty=1):
        """Add an item to the cart."""
        self.items.append((name, price, qty))

    def subtotal(self):
        return sum(p * q for _, p, q in self.items)

    def total(self, code=None):
        """Total with discount and tax."""
        sub = apply_discount(self.subtotal(), code)
        return sub + tax_for(sub)
'''

PRICING = '''DISCOUNTS = {"SAVE10": 0.10}


def apply_discount(amount, code):
    """Apply a discount code to an amount."""
    rate = DISCOUNTS.get(code, 0)
    return round(amount, 2)


def tax_for(amount):
    """Tax owed on an amount."""
    return round(amount, 2)
'''

SETTINGS_PY = """API_TOKEN = "tok_live_abcdefgh12345"


def payment_gateway_url():
    return "https://pay.example.com"
"""

ENV_SECRET = "sk-ant-api03-realsecretvalue123456"
PEM_SECRET = "MIIEsecretPEMbody"
TOKEN_SECRET = "tok_live_abcdefgh12345"

SHOP_FILES = {
    "src/shop/__init__.py": "",
    "src/shop/cart.py": CART,
    "src/shop/pricing.py": PRICING,
    "src/shop/settings.py": SETTINGS_PY,
    ".env": f"ANTHROPIC_API_KEY={ENV_SECRET}\n",
    "config.pem": f"-----BEGIN PRIVATE KEY-----\n{PEM_SECRET}\n-----END PRIVATE KEY-----\n",
}


@pytest.fixture
def shop(make_repo: Callable[..., Path]) -> tuple[RepoLayout, Settings]:
    root = make_repo(SHOP_FILES)
    layout = RepoLayout.for_path(root)
    settings = load_settings(layout.root).settings
    index_repository(layout, settings)
    return layout, settings
