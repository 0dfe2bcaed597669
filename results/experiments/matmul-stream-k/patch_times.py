# patch_times.py IN.ptx OUT.ptx ENTRY...: each ENTRY's thread 0 stores (start, end, smid) of
# its block, read from %globaltimer, into the module global TIMES[block * 4 ..] (u64).
import re, sys
src = open(sys.argv[1]).read()
entries = sys.argv[3:]
first_entry = src.index(".visible .entry")
src = src[:first_entry] + ".global .align 16 .b64 TIMES[65536];\n\n" + src[first_entry:]
for e in entries:
    i = src.index(f".visible .entry {e}(")
    j = src.index("\n{\n", i) + 3
    # end of the entry: the first "\n}\n" after j
    end = src.index("\n}\n", j)
    body = src[j:end]
    head = ("\t.reg .b64 %tq<8>;\n\t.reg .b32 %tk<6>;\n\t.reg .pred %tp<2>;\n"
            "\tmov.u64 %tq0, %globaltimer;\n")
    tail = ("\tmov.u64 %tq1, %globaltimer;\n\tmov.u32 %tk0, %tid.x;\n\tsetp.ne.u32 %tp0, %tk0, 0;\n"
            "\t@%tp0 bra $TSKIP;\n\tmov.u32 %tk1, %ctaid.y;\n\tmov.u32 %tk2, %nctaid.x;\n\tmov.u32 %tk3, %ctaid.x;\n"
            "\tmad.lo.s32 %tk1, %tk1, %tk2, %tk3;\n\tmul.wide.u32 %tq2, %tk1, 32;\n\tmov.u64 %tq3, TIMES;\n"
            "\tadd.s64 %tq2, %tq2, %tq3;\n\tst.global.v2.u64 [%tq2], {%tq0, %tq1};\n"
            "\tmov.u32 %tk4, %smid;\n\tcvt.u64.u32 %tq4, %tk4;\n\tst.global.u64 [%tq2+16], %tq4;\n$TSKIP:\n")
    n_ret = body.count("\tret;")
    assert n_ret == 1, (e, n_ret)
    body = body.replace("\tret;", tail + "\tret;")
    src = src[:j] + head + body + src[end:]
open(sys.argv[2], "w").write(src)
