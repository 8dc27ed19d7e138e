"""Loop-based small dense linear algebra for the kernels (numba).

numba maps `@` to BLAS, whose call overhead and temporaries dominate for the 3x3 and (6+n)
sized blocks of multibody kernels; these write into caller-provided arrays instead.
"""

import numpy as np

from .settings import kernel


@kernel
def mv(A, x, out):
    """out = A x."""
    for i in range(A.shape[0]):
        s = 0.0
        for j in range(A.shape[1]):
            s += A[i, j] * x[j]
        out[i] = s




@kernel
def mtv_add(A, x, out, alpha):
    """out += alpha A^T x."""
    for j in range(A.shape[1]):
        s = 0.0
        for i in range(A.shape[0]):
            s += A[i, j] * x[i]
        out[j] += alpha * s


@kernel
def mm(A, B, out):
    """out = A B (out must not alias A or B)."""
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            s = 0.0
            for k in range(A.shape[1]):
                s += A[i, k] * B[k, j]
            out[i, j] = s





@kernel
def dot(a, b):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * b[i]
    return s


@kernel
def quad(x, A, y):
    """x^T A y."""
    s = 0.0
    for i in range(A.shape[0]):
        r = 0.0
        for j in range(A.shape[1]):
            r += A[i, j] * y[j]
        s += x[i] * r
    return s


@kernel
def copy2(src, dst):
    """dst[:, :] = src (loops compile far faster than numba's slice assignment)."""
    for i in range(src.shape[0]):
        for j in range(src.shape[1]):
            dst[i, j] = src[i, j]


@kernel
def fill2(dst, value):
    for i in range(dst.shape[0]):
        for j in range(dst.shape[1]):
            dst[i, j] = value


@kernel
def copy1(src, dst):
    for i in range(src.shape[0]):
        dst[i] = src[i]


@kernel
def fill1(dst, value):
    for i in range(dst.shape[0]):
        dst[i] = value


@kernel
def chol_factor(M, L):
    """Cholesky factor L of a symmetric positive definite M (False if it is not)."""
    return chol_factor_n(M, L, M.shape[0])


@kernel(inline=True)
def chol_factor_n(M, L, n):
    """Cholesky factor L[:n, :n] of the leading n x n block of a symmetric M (False if that
    block is not positive definite); scratch arrays larger than n stay untouched beyond it.
    One division per column (its pivot's reciprocal), not one per entry: a division's latency
    is several multiplications' and the next column waits for it."""
    for j in range(n):
        s = M[j, j]
        for k in range(j):
            s -= L[j, k] * L[j, k]
        if not s > 0.0:
            return False
        d = np.sqrt(s)
        L[j, j] = d
        r = 1.0 / d
        for i in range(j + 1, n):
            s = M[i, j]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            L[i, j] = s * r
    return True


@kernel
def chol_solve(L, b):
    """Solve (L L^T) x = b in place (b <- x)."""
    chol_solve_n(L, b, L.shape[0])


@kernel(inline=True)
def chol_solve_columns(L, X, n, m):
    """Solve (L L^T) Y = X[:n, :m] in place (X[:n, :m] <- Y) with the leading n x n factor of L:
    m right-hand sides in one sweep, as chol_solve_n but multiplying by each pivot's reciprocal
    (one division per row, not one per right-hand side)."""
    for i in range(n):
        r = 1.0 / L[i, i]
        for c in range(m):
            s = X[i, c]
            for k in range(i):
                s -= L[i, k] * X[k, c]
            X[i, c] = s * r
    for i in range(n - 1, -1, -1):
        r = 1.0 / L[i, i]
        for c in range(m):
            s = X[i, c]
            for k in range(i + 1, n):
                s -= L[k, i] * X[k, c]
            X[i, c] = s * r


@kernel(inline=True)
def chol_solve_n(L, b, n):
    """Solve (L L^T) x = b[:n] in place with the leading n x n factor of L."""
    for i in range(n):
        s = b[i]
        for k in range(i):
            s -= L[i, k] * b[k]
        b[i] = s / L[i, i]
    for i in range(n - 1, -1, -1):
        s = b[i]
        for k in range(i + 1, n):
            s -= L[k, i] * b[k]
        b[i] = s / L[i, i]



@kernel
def lu_factor(A, piv):
    """LU factorisation with partial pivoting of a square A in place (L unit lower, U upper,
    both stored in A), row swaps in piv. False if a pivot is zero (A singular)."""
    n = A.shape[0]
    for k in range(n):
        p = k
        big = abs(A[k, k])
        for i in range(k + 1, n):
            if abs(A[i, k]) > big:
                big = abs(A[i, k])
                p = i
        piv[k] = p
        if big == 0.0:
            return False
        if p != k:
            for j in range(n):
                A[k, j], A[p, j] = A[p, j], A[k, j]
        inv = 1.0 / A[k, k]
        for i in range(k + 1, n):
            A[i, k] *= inv
            lik = A[i, k]
            if lik != 0.0:
                for j in range(k + 1, n):
                    A[i, j] -= lik * A[k, j]
    return True


@kernel
def lu_solve(LU, piv, b):
    """Solve A x = b in place (b <- x) with the factors of lu_factor."""
    n = LU.shape[0]
    for k in range(n):
        p = piv[k]
        if p != k:
            b[k], b[p] = b[p], b[k]
    for i in range(n):
        s = b[i]
        for k in range(i):
            s -= LU[i, k] * b[k]
        b[i] = s
    for i in range(n - 1, -1, -1):
        s = b[i]
        for k in range(i + 1, n):
            s -= LU[i, k] * b[k]
        b[i] = s / LU[i, i]


@kernel
def env_chol_factor(A, L, first, n):
    """Cholesky factor L of the leading n x n block of a symmetric A whose row i is zero left
    of column first[i] (its envelope; A read on and left of the diagonal, within it). L keeps
    the envelope (A. George and J. W. H. Liu, Computer Solution of Large Sparse Positive
    Definite Systems, Prentice-Hall 1981, ch. 4). False if the block is not positive definite."""
    for i in range(n):
        fi = first[i]
        for j in range(fi, i + 1):
            s = A[i, j]
            for k in range(max(fi, first[j]), j):
                s -= L[i, k] * L[j, k]
            if j < i:
                L[i, j] = s / L[j, j]
            elif s > 0.0:
                L[i, i] = np.sqrt(s)
            else:
                return False
    return True


@kernel
def env_chol_solve(L, first, b, n):
    """Solve (L L^T) x = b[:n] in place with an envelope factor of env_chol_factor."""
    for i in range(n):
        s = b[i]
        for k in range(first[i], i):
            s -= L[i, k] * b[k]
        b[i] = s / L[i, i]
    for i in range(n - 1, -1, -1):
        b[i] /= L[i, i]
        for k in range(first[i], i):
            b[k] -= L[i, k] * b[i]
