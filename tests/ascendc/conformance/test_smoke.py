from vecref import Sim


def test_add_bits(run):
    s = Sim(4096, seed=1)
    a = s.tensor("a", "f32", 0, 64); s.fill_random(a)
    b = s.tensor("b", "f32", 256, 64); s.fill_random(b)
    s.tensor("c", "f32", 512, 64)
    s.call("Add", T="f32", dst="c", src0="a", src1="b", form="bits", mask0=0xff00ff, repeat=1)
    s.call("Mul", T="f32", dst="c", src0="c", src1="b", form="count", count=4)
    run(s)
