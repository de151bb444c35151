"""The compiler: the frozen compiled form, ``compile_problem``, :class:`~rateopt.Problem` and goals files.

It imports the goals, metrics, the rate language and below (docs/architecture.md, "Layers").
"""
