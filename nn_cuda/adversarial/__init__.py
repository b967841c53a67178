"""Adversarial examples and adversarial training (FGSM, PGD), serial and asynchronous over MPI.

- attacks.py         FGSM and PGD on any backend (model.input_gradient + backend.pgd_step)
- evaluate.py        clean / FGSM / PGD accuracy per eps
- train_serial.py    Madry-style training: every batch replaced by its adversaries
- async_pipeline.py  rank 0 updates, ranks 1..P-1 generate adversaries with the newest weights they hold
- cli.py             python -m nn_cuda.adversarial eval | train

Importing this package imports neither NumPy nor mpi4py (cli.py sets the BLAS threads under mpirun first).
"""
