# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""SQLAlchemy, imported once for the store's modules. A controller without it can still import every
module (and run audits, whose store then fails with this message); using the store needs it."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

try:
    from sqlalchemy import (  # noqa: F401 pylint: disable=unused-import
        BigInteger, Column, ForeignKey, Index, Integer, LargeBinary, MetaData, String, Table, Text, create_engine,
        delete, event, func, inspect, select, text)
    from sqlalchemy.engine import make_url  # noqa: F401 pylint: disable=unused-import
    from sqlalchemy.exc import IntegrityError  # noqa: F401 pylint: disable=unused-import
    IMPORT_ERROR = None
except ImportError as exc:  # the store says why when it is used (store/engine.py)
    IMPORT_ERROR = exc
    BigInteger = Column = ForeignKey = Index = Integer = LargeBinary = MetaData = String = Table = Text = None
    create_engine = delete = event = func = inspect = select = text = make_url = None
    IntegrityError = type("IntegrityError", (Exception,), {})  # never raised: without SQLAlchemy no store opens

MISSING = ("the run store needs SQLAlchemy 2 and Alembic on the controller (pip install 'sqlalchemy>=2' alembic "
           "'psycopg[binary]>=3', or the collection's requirements.txt): %s")
